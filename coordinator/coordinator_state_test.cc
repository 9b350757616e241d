#include "coordinator/coordinator_state.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(2000000);

v1::RegisterRequest Request(v1::Role role) {
  v1::RegisterRequest r;
  r.set_role(role);
  r.set_host("h");
  return r;
}

v1::RegisterLayersRequest Layers() {
  v1::RegisterLayersRequest r;
  for (uint32_t id = 0; id < 3; ++id) {
    v1::LayerSpec* l = r.add_layers();
    l->set_id(id);
    l->set_name("layer" + std::to_string(id));
    l->set_elements(id == 0 ? 100 : (3u << 20));
  }
  return r;
}

CoordinatorConfig Config() {
  CoordinatorConfig c;
  c.expected_servers = 2;
  c.expected_workers = 2;
  c.plan_window = 10;
  return c;
}

TEST_CASE("the shard map waits for the servers, then stays fixed") {
  CoordinatorState state(Config(), ControllerPolicy(), kT0);
  REQUIRE(state.Register(Request(v1::ROLE_SERVER), kT0).ok());
  CHECK(state.RegisterLayers(Layers()).status().code() == absl::StatusCode::kUnavailable);
  REQUIRE(state.Register(Request(v1::ROLE_SERVER), kT0).ok());
  auto map = state.RegisterLayers(Layers());
  REQUIRE(map.ok());
  CHECK(map->version() == 1);
  CHECK(map->servers_size() == 2);
  CHECK(map->chunks_size() == 1 + 3 + 3);  // 12 MiB layers in 4 MiB chunks
  auto again = state.RegisterLayers(Layers());
  REQUIRE(again.ok());
  CHECK(again->SerializeAsString() == map->SerializeAsString());
  v1::RegisterLayersRequest other = Layers();
  other.mutable_layers(1)->set_elements(5);
  CHECK(state.RegisterLayers(other).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(state.GetShardMap(2).status().code() == absl::StatusCode::kUnavailable);
  CHECK(state.GetShardMap(1).ok());
}

v1::StatsReport SlowNetworkReport(uint32_t rank) {
  v1::StatsReport report;
  report.set_role(v1::ROLE_WORKER);
  report.set_rank(rank);
  report.mutable_worker()->set_bandwidth_bytes_per_sec(1e6);
  report.mutable_worker()->set_backward_ms(1000);
  for (uint32_t id = 0; id < 3; ++id) {
    v1::LayerStats* l = report.add_layers();
    l->set_layer(id);
    l->set_gradient_norm(1.0);
  }
  return report;
}

void BeatAt(CoordinatorState& state, const v1::RegisterResponse& w, uint32_t clock) {
  v1::HeartbeatRequest beat;
  beat.set_role(v1::ROLE_WORKER);
  beat.set_rank(w.rank());
  beat.set_incarnation(w.incarnation());
  beat.set_clock(clock);
  REQUIRE(state.Heartbeat(beat, kT0 + absl::Seconds(1)).ok());
}

TEST_CASE("plans start dense, follow the first measurements at once, then every window") {
  CoordinatorState state(Config(), ControllerPolicy(), kT0);
  for (int i = 0; i < 2; ++i) REQUIRE(state.Register(Request(v1::ROLE_SERVER), kT0).ok());
  auto w0 = state.Register(Request(v1::ROLE_WORKER), kT0);
  auto w1 = state.Register(Request(v1::ROLE_WORKER), kT0);
  REQUIRE(state.RegisterLayers(Layers()).ok());
  v1::CompressionPlan first = state.GetPlan();
  CHECK(first.version() == 1);
  CHECK(first.effective_clock() == 0);  // from the start
  for (const auto& l : first.layers()) CHECK(l.codec() == v1::CODEC_NONE);
  // One worker's measurement is not the job's: the plan stays dense.
  BeatAt(state, *w0, 1);
  BeatAt(state, *w1, 1);
  REQUIRE(state.ReportStats(SlowNetworkReport(w0->rank())).ok());
  CHECK(state.GetPlan().version() == 1);
  // Both workers report a slow network and a long backward pass: a plan
  // follows at once, each worker's from its next clock, and the report's
  // reply names it.
  auto reported = state.ReportStats(SlowNetworkReport(w1->rank()));
  REQUIRE(reported.ok());
  CHECK(reported->plan_version() == 2);
  v1::CompressionPlan second = state.GetPlan();
  CHECK(second.version() == 2);
  CHECK(second.effective_clock() == 0);
  CHECK(second.budget_bytes_per_iteration() == 1000000);
  CHECK(second.layers(0).codec() == v1::CODEC_NONE);  // small
  CHECK(second.layers(1).codec() == v1::CODEC_TOPK);
  // Later reports wait for the window.
  REQUIRE(state.ReportStats(SlowNetworkReport(w0->rank())).ok());
  BeatAt(state, *w0, 10);
  BeatAt(state, *w1, 10);
  CHECK(state.GetPlan().version() == 2);
  // A window of clocks passes on both workers.
  BeatAt(state, *w0, 11);
  BeatAt(state, *w1, 11);
  v1::CompressionPlan third = state.GetPlan();
  CHECK(third.version() == 3);
  CHECK(third.effective_clock() == 12);
  // A policy set by the operator applies at once.
  auto fixed = state.SetPolicy("fixed:int8");
  REQUIRE(fixed.ok());
  CHECK(fixed->version() == 4);
  CHECK(fixed->layers(2).codec() == v1::CODEC_INT8);
  CHECK(state.SetPolicy("fixed:bogus").status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(state.LayerStats().layers_size() == 3);
}

TEST_CASE("a silent worker is reported dead in every heartbeat reply") {
  CoordinatorState state(Config(), ControllerPolicy(), kT0);
  auto server = state.Register(Request(v1::ROLE_SERVER), kT0);
  auto worker = state.Register(Request(v1::ROLE_WORKER), kT0);
  REQUIRE(server.ok());
  REQUIRE(worker.ok());
  CHECK(state.Sweep(kT0 + absl::Seconds(3)).empty());
  v1::HeartbeatRequest beat;
  beat.set_role(v1::ROLE_SERVER);
  beat.set_rank(server->rank());
  beat.set_incarnation(server->incarnation());
  REQUIRE(state.Heartbeat(beat, kT0 + absl::Seconds(5)).ok());
  const auto gone = state.Sweep(kT0 + absl::Seconds(6));
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].role == MemberRole::kWorker);
  auto reply = state.Heartbeat(beat, kT0 + absl::Seconds(6));
  REQUIRE(reply.ok());
  CHECK(reply->dead_workers_size() == 1);
  CHECK(state.ClusterStatus(kT0 + absl::Seconds(6)).members_size() == 2);
  CHECK(state.RequestCheckpoint() == 1);
  CHECK(state.SetPaused(true));
  reply = state.Heartbeat(beat, kT0 + absl::Seconds(7));
  CHECK(reply->paused());
  CHECK(reply->checkpoint_request_id() == 1);
}

}  // namespace
}  // namespace leeway
