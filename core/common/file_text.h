// Whole small text files (logs, ready files, reports): read for display and
// parsing, where a missing file is an expected state, not an error; and
// written so that a reader never sees half of one.
#ifndef LEEWAY_CORE_COMMON_FILE_TEXT_H_
#define LEEWAY_CORE_COMMON_FILE_TEXT_H_

#include <string>

#include "absl/status/status.h"

namespace leeway {

// The file's contents; empty when it does not exist or cannot be read.
std::string ReadFileOrEmpty(const std::string& path);

// Writes `text` to path.tmp, then renames it to `path`.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_FILE_TEXT_H_
