#include "core/transport/ucx_tls.h"

#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace leeway {

std::string TransportListWithoutCma(absl::string_view tls) {
  if (tls.empty() || tls == "all") return "^cma";
  std::vector<std::string> names = absl::StrSplit(tls, ',', absl::SkipEmpty());
  if (tls[0] == '^') {  // a deny list: add cma to it
    for (const auto& name : names) {
      if (name == "cma" || name == "^cma") return std::string(tls);
    }
    names.push_back("cma");
    return absl::StrJoin(names, ",");
  }
  std::vector<std::string> out;
  for (const auto& name : names) {
    if (name == "sm" || name == "shm") {
      out.push_back("sysv");
      out.push_back("posix");
    } else {
      out.push_back(name);  // an explicit "cma" stays: the user asked
    }
  }
  return absl::StrJoin(out, ",");
}

bool TransportListHasNetwork(absl::string_view tls) {
  if (tls.empty() || tls == "all" || tls[0] == '^') return true;
  // UCX's names and aliases of the transports that reach other hosts.
  static constexpr absl::string_view kNetwork[] = {
      "tcp",  "ib",      "rc",      "rc_v",     "rc_x",     "rc_verbs",
      "rc_mlx5", "ud",   "ud_v",    "ud_x",     "ud_verbs", "ud_mlx5",
      "dc",   "dc_x",    "dc_mlx5"};
  for (absl::string_view name : absl::StrSplit(tls, ',', absl::SkipEmpty())) {
    name = name.substr(0, name.find(':'));  // "tcp:aux"
    for (absl::string_view network : kNetwork) {
      if (name == network) return true;
    }
  }
  return false;
}

}  // namespace leeway
