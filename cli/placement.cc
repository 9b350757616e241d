#include "cli/placement.h"

#include <sys/stat.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace leeway {
namespace {

std::string NamespaceOf(const std::string& netns, Role role, int index) {
  switch (role) {
    case Role::kCoordinator:
      return netns + "-coord";
    case Role::kServer:
      return absl::StrCat(netns, "-s", index);
    case Role::kWorker:
      return absl::StrCat(netns, "-w", index);
  }
  return "";
}

// The named namespace this process is in ("" if none), as `ip netns
// identify` says.
std::string CurrentNamespace() {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen("ip netns identify 2>/dev/null", "r"),
                                             ::pclose);
  if (!pipe) return "";
  char line[256] = {0};
  if (std::fgets(line, sizeof(line), pipe.get()) == nullptr) return "";
  return std::string(absl::StripAsciiWhitespace(line));
}

}  // namespace

Placement PlaceRole(const std::string& netns, Role role, int index) {
  if (netns.empty()) return {"127.0.0.1", {}};
  Placement p;
  switch (role) {
    case Role::kCoordinator:
      p.host = "10.77.0.1";
      return p;  // the launcher's own namespace
    case Role::kServer:
      p.host = absl::StrCat("10.77.0.", 10 + index);
      break;
    case Role::kWorker:
      p.host = absl::StrCat("10.77.0.", 100 + index);
      break;
  }
  p.command = {"ip", "netns", "exec", NamespaceOf(netns, role, index)};
  return p;
}

std::map<std::string, std::string> UcxEnvironment(const std::string& netns,
                                                  const std::string& transport) {
  std::map<std::string, std::string> env = {{"UCX_WARN_UNUSED_ENV_VARS", "n"},
                                            {"UCX_LOG_LEVEL", "error"}};
  if (!netns.empty()) {
    env["UCX_TLS"] = "tcp";
    env["UCX_NET_DEVICES"] = "eth0";
  } else if (transport == "tcp") {
    env["UCX_TLS"] = "tcp";
    env["UCX_NET_DEVICES"] = "lo";
  }
  return env;
}

absl::Status CheckPlacement(const std::string& netns, int servers, int workers) {
  if (netns.empty()) return absl::OkStatus();
  const std::string coord = NamespaceOf(netns, Role::kCoordinator, 0);
  if (CurrentNamespace() != coord) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--netns=", netns, ": run leeway launch inside ", coord,
        " (bench/netlab/netlab.sh run --prefix ", netns, " -- leeway launch ...)"));
  }
  for (auto [role, count] : {std::pair{Role::kServer, servers}, std::pair{Role::kWorker, workers}}) {
    for (int i = 0; i < count; ++i) {
      const std::string ns = NamespaceOf(netns, role, i);
      struct stat st;
      if (::stat(("/run/netns/" + ns).c_str(), &st) != 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("--netns=", netns, ": no namespace ", ns,
                         " (netlab.sh up with enough --servers and --workers)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace leeway
