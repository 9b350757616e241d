#include "kernels/payload.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/common/little_endian.h"

namespace leeway {

void WritePayloadHeader(const PayloadHeader& header, uint8_t* out) {
  std::memset(out, 0, kPayloadHeaderBytes);
  StoreLE16(out, kPayloadMagic);
  out[2] = kPayloadVersion;
  out[3] = static_cast<uint8_t>(header.codec);
  StoreLE32(out + 4, header.elements);
  StoreLE32(out + 8, header.param);
}

absl::StatusOr<PayloadHeader> ReadPayloadHeader(
    absl::Span<const uint8_t> payload) {
  if (payload.size() < kPayloadHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("codec payload of ", payload.size(),
                     " bytes is shorter than its header"));
  }
  const uint8_t* p = payload.data();
  if (LoadLE16(p) != kPayloadMagic) {
    return absl::InvalidArgumentError("codec payload has a bad magic");
  }
  if (p[2] != kPayloadVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("codec payload version ", p[2], " is not supported"));
  }
  if (p[3] > kMaxCodecId) {
    return absl::InvalidArgumentError(absl::StrCat("unknown codec ", p[3]));
  }
  if (LoadLE32(p + 12) != 0) {
    return absl::InvalidArgumentError("codec payload reserved bytes not zero");
  }
  PayloadHeader header;
  header.codec = static_cast<CodecId>(p[3]);
  header.elements = LoadLE32(p + 4);
  header.param = LoadLE32(p + 8);
  return header;
}

}  // namespace leeway
