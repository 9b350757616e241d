#include "tests/ready_file.h"

#include <fstream>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace leeway {

absl::StatusOr<PeerId> ConnectFromReadyFile(Transport* transport,
                                            const std::string& path,
                                            const std::string& via) {
  std::ifstream ready(path);
  std::string port_line, address_hex;
  if (!std::getline(ready, port_line) || !std::getline(ready, address_hex)) {
    return absl::NotFoundError(absl::StrCat("cannot read ready file ", path));
  }
  int port = 0;
  if (!absl::SimpleAtoi(port_line, &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("bad port in ", path));
  }
  if (via == "address") {
    return transport->ConnectToWorkerAddress(absl::HexStringToBytes(address_hex));
  }
  if (via != "sockaddr") {
    return absl::InvalidArgumentError(absl::StrCat("unknown --via ", via));
  }
  return transport->Connect("127.0.0.1", static_cast<uint16_t>(port));
}

}  // namespace leeway
