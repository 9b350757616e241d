#include "core/common/token_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace leeway {

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("a token file is required (--token_file)");
  }
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read token file ", path));
  std::stringstream text;
  text << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(text.str()));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(path, " is empty"));
  return token;
}

}  // namespace leeway
