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

}  // namespace leeway
