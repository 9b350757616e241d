#include "core/common/crc32c.h"

#include <string>

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

TEST_CASE("the hardware and table versions agree at every length") {
  unsigned char bytes[300];
  for (int i = 0; i < 300; ++i) bytes[i] = static_cast<unsigned char>(i * 131 + 7);
  for (size_t n = 0; n <= sizeof(bytes); ++n) {
    for (size_t offset : {0, 1, 3}) {
      if (offset + n > sizeof(bytes)) continue;
      CHECK(Crc32c(bytes + offset, n) ==
            crc32c_internal::Crc32cPortable(bytes + offset, n));
    }
  }
}

TEST_CASE("CRC-32C extends piece by piece") {
  const std::string text = "123456789 and then some more bytes to cover words";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const uint32_t first = Crc32c(text.data(), cut);
    CHECK(Crc32cExtend(first, text.data() + cut, text.size() - cut) ==
          Crc32c(text.data(), text.size()));
  }
}

}  // namespace
}  // namespace leeway
