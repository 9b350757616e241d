// Cross-process server tests: one leeway-server process and ps_worker
// processes on 127.0.0.1 over the real transport (two workers through the
// listener, two through worker addresses, i.e. shared memory).
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admin.grpc.pb.h"
#include "catch2/catch.hpp"
#include "coordinator.grpc.pb.h"
#include "tests/http_get.h"
#include "tests/subprocess.h"

namespace leeway {
namespace {

using testing::MakeTempDir;
using testing::RunfilePath;
using testing::Subprocess;
using testing::WaitForFile;

const std::map<std::string, std::string> kEnv = testing::LoopbackUcxEnvironment();

struct Server {
  std::unique_ptr<Subprocess> process;
  std::string ready_file;
};

Server StartServer(const std::string& dir, int staleness, int workers,
                   std::vector<std::string> extra = {}) {
  const std::string token = dir + "/token";
  std::ofstream(token) << "test-token\n";
  Server server;
  server.ready_file = dir + "/server.ready";
  std::vector<std::string> argv = {
      RunfilePath("server/leeway-server"), "--listen=127.0.0.1:0",
      "--token_file=" + token,
      "--staleness=" + (staleness < 0 ? std::string("async") : std::to_string(staleness)),
      "--learning_rate=1", "--threads=2", "--workers=" + std::to_string(workers),
      "--metrics_port=0", "--ready_file=" + server.ready_file};
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::remove(server.ready_file.c_str());
  static int started = 0;
  auto process = Subprocess::Start(argv, kEnv,
                                   absl::StrCat(dir, "/server", started++, ".log"));
  REQUIRE(process.ok());
  server.process = std::move(*process);
  REQUIRE(WaitForFile(server.ready_file, absl::Now() + absl::Seconds(20)).ok());
  return server;
}

std::unique_ptr<Subprocess> StartWorker(const Server& server, const std::string& dir,
                                        int rank, const std::string& via,
                                        std::vector<std::string> extra) {
  std::vector<std::string> argv = {
      RunfilePath("tests/ps_worker"), "--server_file=" + server.ready_file,
      "--via=" + via, "--rank=" + std::to_string(rank)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto process = Subprocess::Start(argv, kEnv, absl::StrCat(dir, "/worker", rank, ".log"));
  REQUIRE(process.ok());
  return std::move(*process);
}

void ExpectWorkerOk(Subprocess& worker) {
  auto code = worker.Wait(absl::Now() + absl::Seconds(600));
  REQUIRE(code.ok());
  INFO(worker.Output());
  CHECK(*code == 0);
  CHECK(worker.Output().find("WORKER OK") != std::string::npos);
}

// The server's /metrics page (the ready file's third line is its port).
absl::StatusOr<std::string> Metrics(const Server& server) {
  absl::StatusOr<std::string> ready = WaitForFile(server.ready_file, absl::Now());
  if (!ready.ok()) return ready.status();
  const std::vector<std::string> lines = absl::StrSplit(*ready, '\n');
  if (lines.size() < 3) return absl::NotFoundError("no metrics port in " + server.ready_file);
  return testing::HttpGet(static_cast<uint16_t>(std::stoi(lines[2])), "/metrics");
}

std::string StopServer(Server& server) {
  absl::StatusOr<std::string> stats = testing::TerminateAndFindLine(
      *server.process, "STATS ", absl::Seconds(30));
  REQUIRE(stats.ok());
  return *stats;
}

TEST_CASE("four workers train 1000 clocks under s = 2 and end exactly") {
  const std::string dir = MakeTempDir("server_process");
  Server server = StartServer(dir, 2, 4);
  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int rank = 0; rank < 4; ++rank) {
    workers.push_back(StartWorker(server, dir, rank, rank < 2 ? "sockaddr" : "address",
                                  {"--clocks=1000", "--staleness=2", "--workers=4"}));
  }
  for (auto& w : workers) ExpectWorkerOk(*w);
  // Each worker pushes 1500 times: once on even clocks, twice (a batch) on
  // odd ones. The same counts on /metrics.
  auto metrics = Metrics(server);
  REQUIRE(metrics.ok());
  CHECK(metrics->find("leeway_server_pushes_applied_total 6000\n") != std::string::npos);
  CHECK(metrics->find("leeway_server_staleness_by_worker_count{worker=\"3\"} 1500\n") !=
        std::string::npos);
  CHECK(metrics->find("leeway_transport_stalls_total 0\n") != std::string::npos);
  const std::string stats = StopServer(server);
  INFO(stats);
  CHECK(stats.find("pushes_applied=6000 ") != std::string::npos);
  CHECK(stats.find("bad_messages=0 ") != std::string::npos);
}

TEST_CASE("bad pushes and clocks are refused; the server lives on") {
  const std::string dir = MakeTempDir("server_process");
  Server server = StartServer(dir, 0, 0);
  // One worker creates the chunk and runs a few clocks; it leaves after.
  auto trainer = StartWorker(server, dir, 0, "sockaddr",
                             {"--clocks=5", "--staleness=0", "--workers=1"});
  ExpectWorkerOk(*trainer);
  auto bad = StartWorker(server, dir, 1, "sockaddr", {"--mode=bad"});
  ExpectWorkerOk(*bad);
  const std::string stats = StopServer(server);
  INFO(stats);
  CHECK(stats.find("pushes_applied=7 ") != std::string::npos);  // 5 clocks, 2 of them batches
  CHECK(stats.find("bad_messages=0 ") == std::string::npos);
}

// The /metrics line of chunk (0, 0) at `version`.
std::string ChunkVersionLine(int version) {
  return absl::StrCat("leeway_server_chunk_version{layer=\"0\",chunk=\"0\"} ", version, "\n");
}

// Polls the server's /metrics until chunk (0, 0) is at `version`;
// returns the last metrics read.
std::string AwaitChunkVersion(const Server& server, int version) {
  std::string metrics;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10);
       metrics.find(ChunkVersionLine(version)) == std::string::npos && absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(50))) {
    metrics = Metrics(server).value_or("");
  }
  return metrics;
}

TEST_CASE("with top-k pulls a clock's first CLOCK publishes before any pull") {
  const std::string dir = MakeTempDir("server_process");
  // Two workers expected and one pushing: the push alone publishes nothing.
  Server server = StartServer(dir, 0, 2, {"--pull_density=0.01"});
  auto worker = StartWorker(server, dir, 0, "sockaddr", {"--mode=clock"});
  ExpectWorkerOk(*worker);
  // Version 1: the push; 2: clock 1's publication, which no pull asked for.
  const std::string metrics = AwaitChunkVersion(server, 2);
  INFO(metrics);
  CHECK(metrics.find(ChunkVersionLine(2)) != std::string::npos);
  StopServer(server);
}

TEST_CASE("with top-k pulls a chunk publishes once every worker has pushed it") {
  const std::string dir = MakeTempDir("server_process");
  Server server = StartServer(dir, 0, 2, {"--pull_density=0.01"});
  auto first = StartWorker(server, dir, 0, "sockaddr", {"--mode=push"});
  ExpectWorkerOk(*first);
  // Its push is applied (the worker waited for the reply); no CLOCK, no
  // pull, and worker 1 has not pushed: nothing is published (a publication
  // queued by mistake would run well within the pause).
  absl::SleepFor(absl::Milliseconds(300));
  std::string metrics = AwaitChunkVersion(server, 1);
  INFO(metrics);
  CHECK(metrics.find(ChunkVersionLine(1)) != std::string::npos);
  auto second = StartWorker(server, dir, 1, "sockaddr", {"--mode=push"});
  ExpectWorkerOk(*second);
  // Version 2: worker 1's push; 3: clock 1's publication.
  metrics = AwaitChunkVersion(server, 3);
  INFO(metrics);
  CHECK(metrics.find(ChunkVersionLine(3)) != std::string::npos);
  StopServer(server);
}

TEST_CASE("a server killed while checkpointing restores a consistent state") {
  const std::string dir = MakeTempDir("server_kill");
  const std::vector<std::string> checkpoints = {
      "--checkpoint_dir=" + dir + "/ckpt", "--checkpoint_interval=0.01",
      "--checkpoint_keep=2"};
  Server server = StartServer(dir, -1, 0, checkpoints);
  auto trainer = StartWorker(server, dir, 0, "sockaddr",
                             {"--clocks=100000", "--staleness=0", "--workers=1"});
  // Kills start once a checkpoint holds the trainer's chunk (the trainer
  // may take a while to start on a loaded machine).
  const absl::Time until = absl::Now() + absl::Seconds(60);
  while (server.process->Output().find("(1 chunks)") == std::string::npos &&
         absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  REQUIRE(server.process->Output().find("(1 chunks)") != std::string::npos);
  std::mt19937 rng(7);
  for (int round = 0; round < 4; ++round) {
    absl::SleepFor(absl::Milliseconds(100 + rng() % 200));
    server.process->Signal(SIGKILL);
    REQUIRE(server.process->Wait(absl::Now() + absl::Seconds(10)).ok());
    if (round == 0) (void)trainer->Wait(absl::Now() + absl::Seconds(60));
    server = StartServer(dir, -1, 0, checkpoints);
    // Each restart restores a checkpoint holding one consistent state.
    auto inspector = StartWorker(server, dir, 10 + round, "sockaddr",
                                 {"--mode=inspect", "--workers=1"});
    ExpectWorkerOk(*inspector);
    INFO(server.process->Output());
    CHECK(server.process->Output().find("restored checkpoint") != std::string::npos);
  }
  const std::string stats = StopServer(server);
  CHECK(stats.find("bad_messages=0 ") != std::string::npos);
}

TEST_CASE("a server with a coordinator follows its deaths and checkpoint requests") {
  const std::string dir = MakeTempDir("server_coordinator");
  std::ofstream(dir + "/token") << "test-token\n";
  absl::StatusOr<testing::CoordinatorProcess> coordinator = testing::StartCoordinator(
      dir,
      {"--workers=2", "--servers=1", "--staleness=0", "--heartbeat_interval_ms=200",
       "--heartbeat_timeout_ms=1000"},
      kEnv);
  REQUIRE(coordinator.ok());
  const std::string address = coordinator->address;
  Server server;
  server.ready_file = dir + "/server.ready";
  auto process = Subprocess::Start(
      {RunfilePath("server/leeway-server"), "--listen=127.0.0.1:0",
       "--token_file=" + dir + "/token", "--coordinator=" + address,
       "--advertise_host=127.0.0.1", "--learning_rate=0.5", "--metrics_port=-1",
       "--checkpoint_dir=" + dir + "/ckpt", "--checkpoint_interval=0",
       "--ready_file=" + server.ready_file},
      kEnv, dir + "/server.log");
  REQUIRE(process.ok());
  server.process = std::move(*process);
  REQUIRE(WaitForFile(server.ready_file, absl::Now() + absl::Seconds(30)).ok());

  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto call = [](auto fn) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer test-token");
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return fn(&context);
  };
  // Worker 1 registers and never heartbeats: the coordinator declares it
  // dead, and the server lets worker 0 (s = 0) go on without it.
  auto stub = v1::Coordinator::NewStub(channel);
  v1::RegisterRequest request;
  request.set_role(v1::ROLE_WORKER);
  request.set_requested_rank(1);
  v1::RegisterResponse registered;
  REQUIRE(call([&](auto* c) { return stub->Register(c, request, &registered); }).ok());
  // The layer comes from the shard map, with its own optimizer: SGD at
  // lr 1 (the server's default is 0.5), which the worker's exact final
  // values depend on.
  v1::RegisterLayersRequest layers;
  v1::LayerSpec* layer = layers.add_layers();
  layer->set_id(0);
  layer->set_name("test.weight");
  layer->set_elements(4096);
  layer->mutable_optimizer()->set_kind(v1::OptimizerSpec::KIND_SGD);
  layer->mutable_optimizer()->set_learning_rate(1.0f);
  v1::ShardMap map;
  REQUIRE(call([&](auto* c) { return stub->RegisterLayers(c, layers, &map); }).ok());
  auto worker = StartWorker(server, dir, 0, "sockaddr",
                            {"--clocks=20", "--staleness=0", "--workers=1"});
  ExpectWorkerOk(*worker);
  CHECK(server.process->Output().find("declared worker 1 dead") != std::string::npos);

  // An operator's checkpoint request reaches the server with a heartbeat.
  auto admin = v1::Admin::NewStub(channel);
  v1::CheckpointResponse checkpoint;
  REQUIRE(call([&](auto* c) {
    return admin->Checkpoint(c, v1::CheckpointRequest(), &checkpoint);
  }).ok());
  CHECK(WaitForFile(dir + "/ckpt/ckpt-1.manifest", absl::Now() + absl::Seconds(10)).ok());

  const std::string stats = StopServer(server);
  CHECK(stats.find("pushes_applied=30 ") != std::string::npos);  // 20 clocks, 10 batches of 2
  coordinator->process->Signal(SIGTERM);
  CHECK(coordinator->process->Wait(absl::Now() + absl::Seconds(10)).ok());
}

}  // namespace
}  // namespace leeway
