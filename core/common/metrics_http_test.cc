#include "core/common/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "catch2/catch.hpp"
#include "tests/http_get.h"

namespace leeway {
namespace {

int Connect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  return fd;
}

std::string Exchange(uint16_t port, const std::string& request) {
  absl::StatusOr<std::string> response = testing::HttpExchange(port, request);
  REQUIRE(response.ok());
  return *response;
}

TEST_CASE("GET /metrics returns the rendered text") {
  auto server = MetricsHttpServer::Start("127.0.0.1", 0, [] { return std::string("m 1\n"); });
  REQUIRE(server.ok());
  const uint16_t port = (*server)->port();
  const std::string ok = Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(ok.rfind("HTTP/1.0 200 OK\r\n", 0) == 0);
  CHECK(ok.find("\r\n\r\nm 1\n") != std::string::npos);
  CHECK(Exchange(port, "GET /healthz HTTP/1.0\r\n\r\n").find("200 OK") != std::string::npos);
  CHECK(Exchange(port, "GET /other HTTP/1.0\r\n\r\n").find("404") != std::string::npos);
  CHECK(Exchange(port, "\x16\x03\x01 garbage\r\n\r\n").find("400") != std::string::npos);
}

TEST_CASE("a client that sends nothing is dropped and others are served") {
  auto server = MetricsHttpServer::Start("127.0.0.1", 0, [] { return std::string("x\n"); });
  REQUIRE(server.ok());
  const uint16_t port = (*server)->port();
  const int silent = Connect(port);
  // Served after the silent one times out (2 s), not never.
  CHECK(Exchange(port, "GET /metrics HTTP/1.0\r\n\r\n").find("200 OK") != std::string::npos);
  ::close(silent);
  // An oversized request is cut off.
  const std::string huge = "GET /metrics HTTP/1.0\r\n" + std::string(20000, 'a');
  CHECK(Exchange(port, huge).empty());
}

TEST_CASE("a bad address is an error") {
  CHECK_FALSE(MetricsHttpServer::Start("not-an-ip", 0, [] { return std::string(); }).ok());
}

}  // namespace
}  // namespace leeway
