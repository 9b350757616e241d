// Reads the cluster token from a file (Kubernetes mounts it from a Secret):
// surrounding whitespace is dropped; a missing path, an unreadable or an
// empty file is an error naming the file.
#ifndef LEEWAY_CORE_COMMON_TOKEN_FILE_H_
#define LEEWAY_CORE_COMMON_TOKEN_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace leeway {

absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_TOKEN_FILE_H_
