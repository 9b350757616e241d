#include "core/common/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/common/thread_name.h"

namespace leeway {
namespace {

constexpr size_t kMaxRequest = 8 << 10;
constexpr absl::Duration kRequestDeadline = absl::Seconds(2);

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string Response(int code, const char* reason, const std::string& type,
                     const std::string& body) {
  return absl::StrCat("HTTP/1.0 ", code, " ", reason, "\r\nContent-Type: ", type,
                      "\r\nContent-Length: ", body.size(),
                      "\r\nConnection: close\r\n\r\n", body);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& host, uint16_t port, Render render) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("bad metrics host ", host));
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("cannot create a socket");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 16) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot listen for metrics on ", host, ":", port, ": ", why));
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return std::unique_ptr<MetricsHttpServer>(
      new MetricsHttpServer(fd, ntohs(addr.sin_port), std::move(render)));
}

MetricsHttpServer::MetricsHttpServer(int fd, uint16_t port, Render render)
    : listen_fd_(fd), port_(port), render_(std::move(render)) {
  thread_ = std::thread([this] {
    NameThisThread("lw-metrics-http");
    Loop();
  });
}

MetricsHttpServer::~MetricsHttpServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

void MetricsHttpServer::Loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    Serve(client);
    ::close(client);
  }
}

void MetricsHttpServer::Serve(int client) {
  std::string request;
  const absl::Time deadline = absl::Now() + kRequestDeadline;
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.find("\n\n") == std::string::npos) {
    const int wait_ms = static_cast<int>(
        absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (wait_ms <= 0 || request.size() > kMaxRequest || stop_) return;
    pollfd p{client, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) return;
    char buffer[1024];
    const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<size_t>(n));
  }
  const std::string line = request.substr(0, request.find_first_of("\r\n"));
  if (!absl::StartsWith(line, "GET ") || line.find(" HTTP/1.") == std::string::npos) {
    WriteAll(client, Response(400, "Bad Request", "text/plain", "bad request\n"));
    return;
  }
  const std::string path = line.substr(4, line.find(' ', 4) - 4);
  if (path == "/metrics") {
    WriteAll(client, Response(200, "OK", "text/plain; version=0.0.4", render_()));
  } else if (path == "/healthz") {
    WriteAll(client, Response(200, "OK", "text/plain", "ok\n"));
  } else {
    WriteAll(client, Response(404, "Not Found", "text/plain", "not found\n"));
  }
}

}  // namespace leeway
