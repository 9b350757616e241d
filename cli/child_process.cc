#include "cli/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace leeway {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::string& name, const std::vector<std::string>& argv,
    const std::map<std::string, std::string>& env, const std::string& log_path) {
  if (argv.empty()) return absl::InvalidArgumentError("no program to start");
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls.
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) merged[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [k, v] : env) merged[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) {
    return absl::InternalError(absl::StrCat("cannot write ", log_path, ": ", std::strerror(errno)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the launcher died already
    ::signal(SIGINT, SIG_IGN);  // Ctrl-C reaches the launcher, which stops us
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    // A bare name is looked up on PATH (e.g. "ip" for a network namespace).
    ::execvpe(args[0], args.data(), envp.data());
    const char* reason = std::strerror(errno);  // no allocation before _exit
    for (const char* part : {"exec ", static_cast<const char*>(args[0]), ": ", reason, "\n"}) {
      (void)!::write(STDERR_FILENO, part, std::strlen(part));
    }
    ::_exit(127);
  }
  ::close(log);
  return std::unique_ptr<ChildProcess>(new ChildProcess(name, pid, log_path));
}

ChildProcess::~ChildProcess() {
  if (!exit_code_.has_value()) Stop(absl::Seconds(2));
}

std::optional<int> ChildProcess::Poll() {
  if (exit_code_.has_value()) return exit_code_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else if (r < 0 && errno == ECHILD) {
    exit_code_ = 255;  // reaped elsewhere: gone either way
  }
  return exit_code_;
}

int ChildProcess::Stop(absl::Duration grace) {
  if (Poll().has_value()) return *exit_code_;
  ::kill(pid_, SIGTERM);
  const absl::Time until = absl::Now() + grace;
  while (absl::Now() < until) {
    if (Poll().has_value()) return *exit_code_;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return *exit_code_;
}

std::string ChildProcess::LastLines(int lines) const {
  std::ifstream in(log_path_);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const std::string& l : last) absl::StrAppend(&out, "  | ", l, "\n");
  return out;
}

}  // namespace leeway
