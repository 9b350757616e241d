#include "tests/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace leeway {
namespace testing {

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    const std::vector<std::string>& argv,
    const std::map<std::string, std::string>& env,
    const std::string& output_path) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) merged[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& kv : env) merged[kv.first] = kv.second;
  std::vector<std::string> env_strings;
  for (const auto& kv : merged) env_strings.push_back(kv.first + "=" + kv.second);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argp[0], &actions, nullptr, argp.data(),
                             envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("posix_spawn ", argv[0], ": ", strerror(rc)));
  }
  return std::unique_ptr<Subprocess>(new Subprocess(pid, output_path));
}

Subprocess::~Subprocess() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

absl::StatusOr<int> Subprocess::Wait(absl::Time deadline) {
  while (!reaped_) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status)
                                     : 128 + WTERMSIG(status);
      break;
    }
    if (r < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("waitpid: ", strerror(errno)));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("process ", pid_, " still running"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return exit_code_;
}

void Subprocess::Signal(int signal) {
  if (!reaped_) kill(pid_, signal);
}

std::string Subprocess::Output() const {
  std::ifstream in(output_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string RunfilePath(const std::string& workspace_relative) {
  const char* dir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  if (dir == nullptr) return workspace_relative;
  return absl::StrCat(dir, "/", workspace ? workspace : "leeway", "/",
                      workspace_relative);
}

absl::StatusOr<std::string> TerminateAndFindLine(Subprocess& process,
                                                 const std::string& prefix,
                                                 absl::Duration timeout) {
  process.Signal(SIGTERM);
  absl::StatusOr<int> code = process.Wait(absl::Now() + timeout);
  if (!code.ok()) return code.status();
  const std::string out = process.Output();
  if (*code != 0) {
    return absl::InternalError(absl::StrCat("exit code ", *code, ": ", out));
  }
  const size_t at = out.find(prefix);
  if (at == std::string::npos) {
    return absl::NotFoundError(absl::StrCat("no line with ", prefix, " in: ", out));
  }
  return out.substr(at, out.find('\n', at) - at);
}

std::map<std::string, std::string> LoopbackUcxEnvironment() {
  return {{"UCX_NET_DEVICES", "lo"},
          {"UCX_WARN_UNUSED_ENV_VARS", "n"},
          {"UCX_LOG_LEVEL", "error"}};
}

std::string MakeTempDir(const std::string& prefix) {
  const char* base = getenv("TEST_TMPDIR");
  std::string pattern =
      absl::StrCat(base ? base : "/tmp", "/", prefix, "XXXXXX");
  char* made = mkdtemp(pattern.data());
  return made ? std::string(made) : pattern;
}

absl::StatusOr<std::string> WaitForFile(const std::string& path,
                                        absl::Time deadline) {
  while (true) {
    std::ifstream in(path);
    if (in.good()) {
      std::stringstream text;
      text << in.rdbuf();
      return text.str();
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("no file ", path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

absl::StatusOr<CoordinatorProcess> StartCoordinator(
    const std::string& dir, const std::vector<std::string>& flags,
    const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {RunfilePath("coordinator/leeway-coordinator"),
                                   "--listen=127.0.0.1:0", "--token_file=" + dir + "/token",
                                   "--metrics_port=-1",
                                   "--ready_file=" + dir + "/coordinator.ready"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  CoordinatorProcess c;
  absl::StatusOr<std::unique_ptr<Subprocess>> process =
      Subprocess::Start(argv, env, dir + "/coordinator.log");
  if (!process.ok()) return process.status();
  c.process = *std::move(process);
  absl::StatusOr<std::string> ready =
      WaitForFile(dir + "/coordinator.ready", absl::Now() + absl::Seconds(20));
  if (!ready.ok()) return ready.status();
  c.address = absl::StrCat("127.0.0.1:", ready->substr(0, ready->find('\n')));
  return c;
}

}  // namespace testing
}  // namespace leeway
