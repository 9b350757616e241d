// A blocking HTTP exchange for tests: sends `request` to 127.0.0.1:port
// and returns everything the server sent back until it closed.
#ifndef LEEWAY_TESTS_HTTP_GET_H_
#define LEEWAY_TESTS_HTTP_GET_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace leeway {
namespace testing {

absl::StatusOr<std::string> HttpExchange(uint16_t port, const std::string& request);

inline absl::StatusOr<std::string> HttpGet(uint16_t port, const std::string& path) {
  return HttpExchange(port, "GET " + path + " HTTP/1.0\r\n\r\n");
}

}  // namespace testing
}  // namespace leeway

#endif  // LEEWAY_TESTS_HTTP_GET_H_
