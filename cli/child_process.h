// ChildProcess: one process of a local cluster started by `leeway launch`,
// with its output in a log file. The child gets SIGTERM when the launcher
// dies (PR_SET_PDEATHSIG), so even a killed launcher leaves no orphans.
// Stop() asks politely (SIGTERM), then kills after a grace period.
// Not thread-safe; one owner.
#ifndef LEEWAY_CLI_CHILD_PROCESS_H_
#define LEEWAY_CLI_CHILD_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace leeway {

class ChildProcess {
 public:
  // `name` names it in messages ("server 1"). The environment is the
  // launcher's plus `env`.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      const std::string& name, const std::vector<std::string>& argv,
      const std::map<std::string, std::string>& env, const std::string& log_path);
  ~ChildProcess();  // Stop(2 s) if still running

  const std::string& name() const { return name_; }
  const std::string& log_path() const { return log_path_; }
  pid_t pid() const { return pid_; }

  // The exit code once it has exited (128 + signal when killed), without
  // blocking.
  std::optional<int> Poll();
  // SIGTERM, then SIGKILL after `grace`; returns the exit code.
  int Stop(absl::Duration grace);
  // The last `lines` lines of its log.
  std::string LastLines(int lines) const;

 private:
  ChildProcess(std::string name, pid_t pid, std::string log_path)
      : name_(std::move(name)), pid_(pid), log_path_(std::move(log_path)) {}

  std::string name_;
  pid_t pid_;
  std::string log_path_;
  std::optional<int> exit_code_;
};

}  // namespace leeway

#endif  // LEEWAY_CLI_CHILD_PROCESS_H_
