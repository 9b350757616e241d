#include "core/common/file_text.h"

#include <fstream>
#include <sstream>

namespace leeway {

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace leeway
