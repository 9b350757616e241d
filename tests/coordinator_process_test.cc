// The coordinator as a real process: test clients register, heartbeat,
// report and go silent over gRPC; the admin API is used through the real
// `leeway` binary, with and without the token, and its JSON parsed back.
#include <signal.h>

#include <fstream>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admin.grpc.pb.h"
#include "catch2/catch.hpp"
#include "coordinator.grpc.pb.h"
#include "tests/subprocess.h"

namespace leeway {
namespace {

using testing::MakeTempDir;
using testing::RunfilePath;
using testing::Subprocess;
using testing::WaitForFile;

struct Coordinator {
  std::unique_ptr<Subprocess> process;
  std::string address;
  std::string dir;
};

Coordinator Start() {
  Coordinator c;
  c.dir = MakeTempDir("coordinator");
  std::ofstream(c.dir + "/token") << "cluster-secret\n";
  std::ofstream(c.dir + "/wrong") << "not-it\n";
  auto process = Subprocess::Start(
      {RunfilePath("coordinator/leeway-coordinator"), "--listen=127.0.0.1:0",
       "--token_file=" + c.dir + "/token", "--workers=2", "--servers=1",
       "--heartbeat_interval_ms=200", "--heartbeat_timeout_ms=1000", "--metrics_port=-1",
       "--ready_file=" + c.dir + "/ready"},
      {}, c.dir + "/coordinator.log");
  REQUIRE(process.ok());
  c.process = std::move(*process);
  auto ready = WaitForFile(c.dir + "/ready", absl::Now() + absl::Seconds(20));
  REQUIRE(ready.ok());
  c.address = "127.0.0.1:" + std::vector<std::string>(absl::StrSplit(*ready, '\n'))[0];
  return c;
}

// Runs the leeway CLI; returns (exit code, stdout + stderr).
std::pair<int, std::string> Leeway(const Coordinator& c, std::vector<std::string> args,
                                   const std::string& token_file = "token") {
  std::vector<std::string> argv = {RunfilePath("cli/leeway"), "--coordinator=" + c.address,
                                   "--token-file=" + c.dir + "/" + token_file};
  argv.insert(argv.end(), args.begin(), args.end());
  static int n = 0;
  auto p = Subprocess::Start(argv, {}, absl::StrCat(c.dir, "/leeway", n++, ".out"));
  REQUIRE(p.ok());
  auto code = (*p)->Wait(absl::Now() + absl::Seconds(30));
  REQUIRE(code.ok());
  return {*code, (*p)->Output()};
}

template <typename Message>
Message FromJson(const std::string& text) {
  Message m;
  REQUIRE(google::protobuf::util::JsonStringToMessage(text, &m).ok());
  return m;
}

struct Client {
  std::unique_ptr<v1::Coordinator::Stub> stub;
  std::string token;
  grpc::Status Call(const std::function<grpc::Status(grpc::ClientContext*)>& fn) const {
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return fn(&context);
  }
};

TEST_CASE("members register, heartbeat, die, and the CLI sees it all") {
  Coordinator c = Start();
  auto channel = grpc::CreateChannel(c.address, grpc::InsecureChannelCredentials());
  Client client{v1::Coordinator::NewStub(channel), "cluster-secret"};

  REQUIRE(channel->WaitForConnected(std::chrono::system_clock::now() +
                                    std::chrono::seconds(10)));
  // Every call wants the token; a malformed one gets INVALID_ARGUMENT.
  Client anonymous{v1::Coordinator::NewStub(channel), ""};
  v1::RegisterRequest request;
  request.set_role(v1::ROLE_WORKER);
  v1::RegisterResponse registered;
  CHECK(anonymous.Call([&](auto* ctx) { return anonymous.stub->Register(ctx, request, &registered); })
            .error_code() == grpc::StatusCode::UNAUTHENTICATED);
  v1::RegisterRequest malformed;  // no role
  CHECK(client.Call([&](auto* ctx) { return client.stub->Register(ctx, malformed, &registered); })
            .error_code() == grpc::StatusCode::INVALID_ARGUMENT);

  // One server and two workers.
  v1::RegisterRequest server = request;
  server.set_role(v1::ROLE_SERVER);
  server.set_host("s0");
  REQUIRE(client.Call([&](auto* ctx) { return client.stub->Register(ctx, server, &registered); }).ok());
  std::vector<v1::RegisterResponse> workers(2);
  for (auto& w : workers) {
    REQUIRE(client.Call([&](auto* ctx) { return client.stub->Register(ctx, request, &w); }).ok());
    CHECK(w.heartbeat_interval_ms() == 200);
  }
  v1::RegisterLayersRequest layers;
  layers.set_rank(workers[0].rank());
  for (uint32_t id = 0; id < 2; ++id) {
    v1::LayerSpec* l = layers.add_layers();
    l->set_id(id);
    l->set_name(absl::StrCat("fc", id, ".weight"));
    l->set_elements(id == 0 ? 1000 : 2000000);
  }
  v1::ShardMap map;
  REQUIRE(client.Call([&](auto* ctx) { return client.stub->RegisterLayers(ctx, layers, &map); }).ok());
  CHECK(map.version() == 1);

  // Both heartbeat for a while; then worker 1 falls silent.
  auto beat = [&](const v1::RegisterResponse& w, uint32_t clock) {
    v1::HeartbeatRequest hb;
    hb.set_role(v1::ROLE_WORKER);
    hb.set_rank(w.rank());
    hb.set_incarnation(w.incarnation());
    hb.set_clock(clock);
    v1::HeartbeatResponse reply;
    return client.Call([&](auto* ctx) { return client.stub->Heartbeat(ctx, hb, &reply); });
  };
  for (uint32_t clock = 1; clock <= 5; ++clock) {
    REQUIRE(beat(workers[0], clock).ok());
    REQUIRE(beat(workers[1], clock).ok());
    absl::SleepFor(absl::Milliseconds(200));
  }
  const absl::Time silent_since = absl::Now();
  absl::Time declared = absl::InfiniteFuture();
  for (uint32_t clock = 6; clock < 40 && declared == absl::InfiniteFuture(); ++clock) {
    REQUIRE(beat(workers[0], clock).ok());
    v1::GetMembersResponse members;
    REQUIRE(client.Call([&](auto* ctx) {
      return client.stub->GetMembers(ctx, v1::GetMembersRequest(), &members);
    }).ok());
    for (const v1::Member& m : members.members()) {
      if (m.role() == v1::ROLE_WORKER && m.rank() == workers[1].rank() &&
          m.health() == v1::HEALTH_DEAD) {
        declared = absl::Now();
      }
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  // Within timeout + one heartbeat interval (+ this loop's own step).
  CHECK(declared - silent_since <= absl::Milliseconds(1000 + 200 + 150));

  // Worker 0 reports its statistics; the admin API serves them.
  v1::StatsReport report;
  report.set_role(v1::ROLE_WORKER);
  report.set_rank(workers[0].rank());
  report.mutable_worker()->set_samples_per_sec(128);
  report.mutable_worker()->set_iteration_ms(100);
  report.mutable_worker()->set_push_wait_ms(5);
  report.mutable_worker()->set_bytes_sent(1 << 20);
  v1::LayerStats* stats = report.add_layers();
  stats->set_layer(1);
  stats->set_gradient_norm(2.5);
  stats->set_residual_ratio(0.75);
  v1::ReportStatsResponse reported;
  REQUIRE(client.Call([&](auto* ctx) {
    return client.stub->ReportStats(ctx, report, &reported);
  }).ok());
  auto [throughput_code, throughput_out] = Leeway(c, {"-o", "json", "throughput"});
  REQUIRE(throughput_code == 0);
  const auto throughput = FromJson<v1::ThroughputReport>(throughput_out);
  CHECK(throughput.samples_per_sec() == 128);
  CHECK(throughput.comm_share() == Approx(0.05));

  // The CLI: JSON parses back; tables name what they show.
  auto [code, out] = Leeway(c, {"-o", "json", "status"});
  REQUIRE(code == 0);
  const auto status = FromJson<v1::ClusterStatus>(out);
  CHECK(status.members_size() == 3);
  CHECK(status.shard_map_version() == 1);
  int dead = 0;
  for (const auto& m : status.members()) dead += m.health() == v1::HEALTH_DEAD;
  CHECK(dead == 1);
  auto [layers_code, layers_out] = Leeway(c, {"-o", "json", "layers"});
  REQUIRE(layers_code == 0);
  const auto layer_report = FromJson<v1::LayerStatsReport>(layers_out);
  REQUIRE(layer_report.layers_size() == 2);
  CHECK(layer_report.layers(1).stats().gradient_norm() == 2.5);
  auto [set_code, set_out] = Leeway(c, {"compression", "set", "fixed:topk:0.01"});
  CHECK(set_code == 0);
  CHECK(set_out.find("fixed:topk:0.01") != std::string::npos);
  CHECK(set_out.find("| topk") != std::string::npos);
  auto [table_code, table_out] = Leeway(c, {"status"});
  CHECK(table_code == 0);
  CHECK(table_out.find("| worker |") != std::string::npos);
  CHECK(table_out.find("dead") != std::string::npos);

  // Wrong token, bad policy, unknown command: one line, non-zero exit.
  auto [bad_code, bad_out] = Leeway(c, {"status"}, "wrong");
  CHECK(bad_code == 1);
  CHECK(bad_out.find("UNAUTHENTICATED") != std::string::npos);
  auto [policy_code, policy_out] = Leeway(c, {"compression", "set", "fixed:nope"});
  CHECK(policy_code == 1);
  CHECK(policy_out.find("INVALID_ARGUMENT") != std::string::npos);
  CHECK(Leeway(c, {"frobnicate"}).first == 2);
  CHECK(Leeway(c, {"pause"}).second == "paused\n");

  c.process->Signal(SIGTERM);
  auto exit_code = c.process->Wait(absl::Now() + absl::Seconds(10));
  REQUIRE(exit_code.ok());
  CHECK(*exit_code == 0);
}

TEST_CASE("a coordinator refuses chunks its data plane could not carry") {
  const std::string dir = MakeTempDir("chunkbytes");
  std::ofstream(dir + "/token") << "cluster-secret\n";
  for (const char* bytes : {"0", "1023", "16777217", "100000000"}) {
    auto process = Subprocess::Start({RunfilePath("coordinator/leeway-coordinator"),
                                      "--listen=127.0.0.1:0", "--token_file=" + dir + "/token",
                                      "--metrics_port=-1", std::string("--chunk_bytes=") + bytes},
                                     {}, dir + "/coordinator.log");
    REQUIRE(process.ok());
    auto code = (*process)->Wait(absl::Now() + absl::Seconds(10));
    INFO(bytes << ": " << (*process)->Output());
    REQUIRE(code.ok());
    CHECK(*code == 2);
    CHECK((*process)->Output().find(std::string("--chunk_bytes must be 1024 to 16777216, not ") +
                                    bytes) != std::string::npos);
  }
}

TEST_CASE("the CLI says when the coordinator cannot be reached") {
  Coordinator c;
  c.dir = MakeTempDir("nocoordinator");
  c.address = "127.0.0.1:1";
  std::ofstream(c.dir + "/token") << "x\n";
  auto [code, out] = Leeway(c, {"--timeout=3", "status"});
  CHECK(code == 1);
  CHECK(out.find("cannot reach the coordinator") != std::string::npos);
}

}  // namespace
}  // namespace leeway
