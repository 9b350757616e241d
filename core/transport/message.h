// A received data-plane message: who sent it, its validated header, and its
// payload. The payload lives either in `owned` (the transport allocated it)
// or in a buffer the receiver supplied beforehand (zero-copy rendezvous);
// `payload` views it in both cases. Moving a Message keeps the view valid.
#ifndef LEEWAY_CORE_TRANSPORT_MESSAGE_H_
#define LEEWAY_CORE_TRANSPORT_MESSAGE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/transport/wire.h"

namespace leeway {

// Identifies a connected peer within one Transport; never reused.
using PeerId = uint64_t;

struct Message {
  PeerId peer = 0;
  WireHeader header;
  std::vector<uint8_t> owned;
  absl::Span<uint8_t> payload;
};

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_MESSAGE_H_
