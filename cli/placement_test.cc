#include "cli/placement.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("loopback placement runs everything here") {
  Placement s = PlaceRole("", Role::kServer, 3);
  CHECK(s.host == "127.0.0.1");
  CHECK(s.command.empty());
  CHECK(UcxEnvironment("", "sm").count("UCX_TLS") == 0);
  CHECK(UcxEnvironment("", "tcp").at("UCX_NET_DEVICES") == "lo");
  CHECK(CheckPlacement("", 2, 4).ok());
}

TEST_CASE("namespace placement uses netlab.sh's hosts and addresses") {
  Placement c = PlaceRole("lw", Role::kCoordinator, 0);
  CHECK(c.host == "10.77.0.1");
  CHECK(c.command.empty());
  Placement s = PlaceRole("lw", Role::kServer, 1);
  CHECK(s.host == "10.77.0.11");
  CHECK(s.command == std::vector<std::string>{"ip", "netns", "exec", "lw-s1"});
  Placement w = PlaceRole("lab", Role::kWorker, 5);
  CHECK(w.host == "10.77.0.105");
  CHECK(w.command.back() == "lab-w5");
  auto env = UcxEnvironment("lw", "sm");
  CHECK(env.at("UCX_TLS") == "tcp");
  CHECK(env.at("UCX_NET_DEVICES") == "eth0");
  // Not inside lw-coord here (tests never run in netlab's namespaces).
  absl::Status outside = CheckPlacement("leeway-test-none", 1, 1);
  CHECK(outside.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(outside.message().find("netlab.sh run") != absl::string_view::npos);
}

}  // namespace
}  // namespace leeway
