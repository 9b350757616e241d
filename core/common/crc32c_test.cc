#include "core/common/crc32c.h"

#include <cstring>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("crc32c matches the standard check values") {
  const char* check = "123456789";
  CHECK(Crc32c(check, std::strlen(check)) == 0xE3069283u);
  CHECK(Crc32c("", 0) == 0u);
  unsigned char zeros[32] = {};
  CHECK(Crc32c(zeros, sizeof(zeros)) == 0x8A9136AAu);  // RFC 3720 B.4
}

}  // namespace
}  // namespace leeway
