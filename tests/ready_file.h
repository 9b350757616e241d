// The ready file a test server writes once it listens (port, then its UCP
// worker address in hex, one per line), and connecting to it the way a
// test client is told to: "sockaddr" (127.0.0.1:port) or "address" (the
// worker address, which lets co-located peers use shared memory).
#ifndef LEEWAY_TESTS_READY_FILE_H_
#define LEEWAY_TESTS_READY_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/transport/transport.h"

namespace leeway {

absl::StatusOr<PeerId> ConnectFromReadyFile(Transport* transport,
                                            const std::string& path,
                                            const std::string& via);

}  // namespace leeway

#endif  // LEEWAY_TESTS_READY_FILE_H_
