// A worker's ControlSession against the real coordinator process: what the
// training loop hands it reaches the coordinator, and what the coordinator
// decides comes back, without waiting for a heartbeat.
#include <fstream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "coordinator.grpc.pb.h"
#include "tests/subprocess.h"
#include "worker/control_session.h"

namespace leeway {
namespace {

using testing::MakeTempDir;

TEST_CASE("a report that completes the first measurement brings the plan back at once") {
  const std::string dir = MakeTempDir("session");
  std::ofstream(dir + "/token") << "cluster-secret\n";
  // Heartbeats every 5 s: anything sooner did not wait for one.
  absl::StatusOr<testing::CoordinatorProcess> coordinator = testing::StartCoordinator(
      dir, {"--workers=1", "--servers=1", "--policy=adaptive", "--heartbeat_interval_ms=5000",
            "--heartbeat_timeout_ms=60000"});
  REQUIRE(coordinator.ok());
  const std::string address = coordinator->address;

  auto rpc = v1::Coordinator::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  auto call = [&](const std::function<grpc::Status(grpc::ClientContext*)>& fn) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer cluster-secret");
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return fn(&context);
  };
  v1::RegisterRequest server;
  server.set_role(v1::ROLE_SERVER);
  server.set_host("s0");
  v1::RegisterResponse registered;
  REQUIRE(call([&](auto* c) { return rpc->Register(c, server, &registered); }).ok());

  ControlSessionOptions options;
  options.coordinator = address;
  options.token = "cluster-secret";
  options.host = "w0";
  auto session = ControlSession::Register(options, absl::Now() + absl::Seconds(10));
  REQUIRE(session.ok());
  CHECK((*session)->registration().heartbeat_interval_ms() == 5000);
  v1::RegisterLayersRequest layers;
  layers.set_rank((*session)->registration().rank());
  v1::LayerSpec* layer = layers.add_layers();
  layer->set_id(0);
  layer->set_name("fc.weight");
  layer->set_elements(4000000);
  v1::ShardMap map;
  REQUIRE(call([&](auto* c) { return rpc->RegisterLayers(c, layers, &map); }).ok());
  (*session)->Start();

  // The first report measures a slow link: the coordinator plans top-k.
  v1::StatsReport report;
  report.set_role(v1::ROLE_WORKER);
  report.set_rank((*session)->registration().rank());
  report.set_clock(1);
  report.mutable_worker()->set_bandwidth_bytes_per_sec(1e6);
  report.mutable_worker()->set_backward_ms(1000);
  v1::LayerStats* stats = report.add_layers();
  stats->set_layer(0);
  stats->set_gradient_norm(1.0);
  const absl::Time reported = absl::Now();
  (*session)->Report(report);
  std::optional<v1::CompressionPlan> plan;
  while (!plan && absl::Now() - reported < absl::Seconds(4)) {
    plan = (*session)->TakePlan();
    absl::SleepFor(absl::Milliseconds(20));
  }
  INFO(coordinator->process->Output());
  REQUIRE(plan.has_value());
  CHECK(plan->version() == 2);
  CHECK(plan->effective_clock() == 0);  // each worker's next clock
  CHECK(plan->layers(0).codec() == v1::CODEC_TOPK);
  session->reset();
}

}  // namespace
}  // namespace leeway
