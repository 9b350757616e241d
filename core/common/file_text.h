// Whole small text files (logs, ready files, reports) read for display and
// parsing, where a missing file is an expected state, not an error.
#ifndef LEEWAY_CORE_COMMON_FILE_TEXT_H_
#define LEEWAY_CORE_COMMON_FILE_TEXT_H_

#include <string>

namespace leeway {

// The file's contents; empty when it does not exist or cannot be read.
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_FILE_TEXT_H_
