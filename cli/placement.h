// Where `leeway launch` runs each role: on this machine's loopback, or -
// for communication studies on an emulated slow network - in the network
// namespaces that bench/netlab/netlab.sh makes, one per host, with the
// addresses that script gives them: the coordinator 10.77.0.1 (the
// launcher runs in that namespace too), server i 10.77.0.(10+i), worker i
// 10.77.0.(100+i), each behind its own shaped eth0.
#ifndef LEEWAY_CLI_PLACEMENT_H_
#define LEEWAY_CLI_PLACEMENT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace leeway {

struct Placement {
  std::string host;                  // the address to listen on and advertise
  std::vector<std::string> command;  // prefix that runs a program there
};

enum class Role { kCoordinator, kServer, kWorker };

// `netns` empty: loopback. Otherwise the namespaces "<netns>-coord",
// "<netns>-s<i>", "<netns>-w<i>".
Placement PlaceRole(const std::string& netns, Role role, int index);

// The UCX settings children get: TCP on eth0 in namespaces; otherwise
// shared memory, or TCP on lo when `transport` is "tcp".
std::map<std::string, std::string> UcxEnvironment(const std::string& netns,
                                                  const std::string& transport);

// With namespaces: an error unless this process runs in "<netns>-coord"
// (netlab.sh run does that) and the other hosts exist.
absl::Status CheckPlacement(const std::string& netns, int servers, int workers);

}  // namespace leeway

#endif  // LEEWAY_CLI_PLACEMENT_H_
