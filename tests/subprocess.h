// Subprocess: a child process for cross-process tests, started with
// posix_spawn, with extra environment, its output captured to a file, and
// a destructor that kills it (SIGKILL) so that no test leaves orphans.
//
// Not thread-safe; one owner.
//
// Example:
//   auto server = Subprocess::Start({"tests/transport_peer", "serve", ...},
//                                   {{"UCX_TLS", "tcp"}}, "/tmp/server.log");
//   REQUIRE(server.ok());
//   auto exit_code = (*server)->Wait(absl::Now() + absl::Seconds(30));
#ifndef LEEWAY_TESTS_SUBPROCESS_H_
#define LEEWAY_TESTS_SUBPROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace leeway {
namespace testing {

class Subprocess {
 public:
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(
      const std::vector<std::string>& argv,
      const std::map<std::string, std::string>& env,
      const std::string& output_path);
  ~Subprocess();

  // Waits for exit; returns the exit code (128+signal when killed), or
  // DEADLINE_EXCEEDED.
  absl::StatusOr<int> Wait(absl::Time deadline);
  void Signal(int signal);
  pid_t pid() const { return pid_; }
  // What the child printed (stdout and stderr) so far.
  std::string Output() const;

 private:
  Subprocess(pid_t pid, std::string output_path)
      : pid_(pid), output_path_(std::move(output_path)) {}
  pid_t pid_;
  std::string output_path_;
  bool reaped_ = false;
  int exit_code_ = 0;
};

// Stops a server-like child with SIGTERM and returns the line of its
// output that starts with `prefix` (e.g. its "STATS " counters). An error
// if it does not exit 0 within `timeout` or never printed the line.
absl::StatusOr<std::string> TerminateAndFindLine(Subprocess& process,
                                                 const std::string& prefix,
                                                 absl::Duration timeout);

// The UCX settings the cross-process tests give their children: loopback
// only, quiet, no warnings about variables a transport does not use.
std::map<std::string, std::string> LoopbackUcxEnvironment();

// Path of a binary built in this workspace, from a test's runfiles.
std::string RunfilePath(const std::string& workspace_relative);

// A fresh directory for one test's files (under TEST_TMPDIR).
std::string MakeTempDir(const std::string& prefix);

// Polls until `path` exists (written whole by its creator with a rename),
// then returns its contents; DEADLINE_EXCEEDED otherwise.
absl::StatusOr<std::string> WaitForFile(const std::string& path,
                                        absl::Time deadline);

// A leeway-coordinator (the test needs it as data) listening on 127.0.0.1,
// any port, with its token in `dir`/token, its log in `dir`, and `flags`
// added; returned once it is ready, with the address to reach it at.
struct CoordinatorProcess {
  std::unique_ptr<Subprocess> process;
  std::string address;  // 127.0.0.1:port
};
absl::StatusOr<CoordinatorProcess> StartCoordinator(
    const std::string& dir, const std::vector<std::string>& flags,
    const std::map<std::string, std::string>& env = {});

}  // namespace testing
}  // namespace leeway

#endif  // LEEWAY_TESTS_SUBPROCESS_H_
