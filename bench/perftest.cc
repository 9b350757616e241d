#include "bench/perftest.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/subprocess.h"

namespace leeway {
namespace {

absl::StatusOr<uint16_t> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    close(fd);
    return absl::InternalError("bind");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// True once some socket listens on `port` (read from /proc, so that the
// check does not consume perftest's single accept()).
bool Listening(uint16_t port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  const std::string want = absl::StrFormat(":%04X", port);
  while (std::getline(tcp, line)) {
    std::vector<std::string> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() > 3 && absl::EndsWith(fields[1], want) &&
        fields[3] == "0A") {
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<PerftestResult> ParsePerftestOutput(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("Final:", 0) != 0) continue;
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    // Final: iters lat50 lat_avg lat_overall bw_avg bw_overall rate_avg rate_overall
    PerftestResult r;
    if (f.size() < 9 || !absl::SimpleAtod(f[4], &r.latency_us) ||
        !absl::SimpleAtod(f[6], &r.bandwidth_mbps) ||
        !absl::SimpleAtod(f[8], &r.message_rate)) {
      return absl::InvalidArgumentError(absl::StrCat("bad Final line: ", line));
    }
    return r;
  }
  return absl::NotFoundError("ucx_perftest printed no Final line");
}

absl::StatusOr<PerftestResult> RunPerftest(
    const std::string& test, size_t size, int iterations, int outstanding,
    const std::map<std::string, std::string>& env, const std::string& log_dir,
    PerftestCpus cpus) {
  auto port = FreePort();
  if (!port.ok()) return port.status();
  const std::vector<std::string> common = {
      "-t", test, "-s", std::to_string(size), "-n", std::to_string(iterations),
      "-w", std::to_string(std::max(1, iterations / 10)), "-O",
      std::to_string(outstanding), "-p", std::to_string(*port)};
  const auto pinned = [](std::vector<std::string> argv, int cpu) {
    if (cpu >= 0) argv.insert(argv.end(), {"-c", std::to_string(cpu)});
    return argv;
  };
  std::vector<std::string> server_argv =
      pinned({"/usr/bin/ucx_perftest"}, cpus.server);
  server_argv.insert(server_argv.end(), common.begin(), common.end());
  auto server = testing::Subprocess::Start(server_argv, env,
                                           log_dir + "/perftest_server.log");
  if (!server.ok()) return server.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!Listening(*port)) {
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError("ucx_perftest server never listened");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<std::string> client_argv =
      pinned({"/usr/bin/ucx_perftest", "127.0.0.1"}, cpus.client);
  client_argv.insert(client_argv.end(), common.begin(), common.end());
  auto client = testing::Subprocess::Start(client_argv, env,
                                           log_dir + "/perftest_client.log");
  if (!client.ok()) return client.status();
  auto code = (*client)->Wait(absl::Now() + absl::Seconds(300));
  if (!code.ok()) return code.status();
  (*server)->Wait(absl::Now() + absl::Seconds(10)).IgnoreError();
  if (*code != 0) {
    return absl::InternalError(absl::StrCat("ucx_perftest exited ", *code, ": ",
                                            (*client)->Output()));
  }
  return ParsePerftestOutput((*client)->Output());
}

}  // namespace leeway
