// ucx_landed: a second baseline for transport_bench, bare UCP active
// messages whose receiver lands every payload in its own buffer (a memcpy
// of eager data, a rendezvous receive into the buffer for large messages),
// as any parameter server must. ucx_perftest's ucp_am_bw receiver never
// reads eager payloads (its handler only counts them), so on shared memory
// the sender's copy into the FIFO stays in its own cache there; a receiver
// that reads the data moves every cache line between the cores and halves
// the small-message rate. This baseline measures UCX doing exactly the
// work our transport does, minus our transport.
//
// The server is a child process (RunLandedServer, from --role); the client
// sends `count` messages of `size` bytes with `window` in flight, then a
// fence that the server acknowledges once it has landed everything before.
// Both use the UCX_TLS of the environment. Not thread-safe.
#ifndef LEEWAY_BENCH_UCX_LANDED_H_
#define LEEWAY_BENCH_UCX_LANDED_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace leeway {

// Serves until SIGTERM; writes its UCP worker address (hex) to ready_file.
int RunLandedServer(const std::string& ready_file, uint32_t max_size);

// One timed run against the server at `address_hex`; returns seconds.
class LandedClient {
 public:
  static absl::StatusOr<std::unique_ptr<LandedClient>> Connect(
      const std::string& address_hex);
  ~LandedClient();
  absl::StatusOr<double> TimePushes(uint32_t size, int count, int window);

  struct Ucx;

 private:
  explicit LandedClient(std::unique_ptr<Ucx> ucx);
  std::unique_ptr<Ucx> ucx_;
};

}  // namespace leeway

#endif  // LEEWAY_BENCH_UCX_LANDED_H_
