// ps_worker: a small worker for the cross-process server tests, over the
// real transport and the real ServerClient.
//
// --mode=train: joins, initializes chunk (0, 0) of kElements zeros, and for
// --clocks clocks: pulls (checking the SSP bound on what it sees), pushes
// one update and sends CLOCK. Worker w's update adds 2^-10 to element w and
// to the last element (shared by all) with the server at SGD, lr 1, so the
// values count exactly which updates a pull includes. The codec rotates
// through none, fp16, bf16 and topk (exact for these values). On odd clocks
// the update goes in a PUSH_BATCH with a second, all-zero entry (two pushes
// for SSP, one change). On even clocks the pull is a PULL_BATCH that also
// brings a second copy up to date (dense first, then deltas), held to the
// same bound. At the end it waits for everyone and checks the final values
// analytically.
// --mode=bad: sends what a broken worker would (pushes and batches) and
// checks that each is refused with an error while the chunk stays as it was.
// --mode=inspect: pulls once (the server should run async) and checks that
// the chunk is one consistent state: whole counts, and the shared element
// equal to their sum (each push adds to both under the chunk's lock).
// --mode=clock / --mode=push: one push at clock 0, then CLOCK(1) / nothing.
// Prints "WORKER OK ..." and exits 0, or "WORKER FAILED ..." and exits 1.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "coordinator.grpc.pb.h"
#include "core/common/logging.h"
#include "core/transport/pull_batch.h"
#include "core/transport/push_batch.h"
#include "core/transport/transport.h"
#include "kernels/codec.h"
#include "tests/ready_file.h"
#include "worker/server_client.h"

ABSL_FLAG(std::string, server_file, "", "the server's ready file");
ABSL_FLAG(std::string, via, "sockaddr", "sockaddr or address");
ABSL_FLAG(std::string, token, "test-token", "cluster token");
ABSL_FLAG(uint64_t, job, 1, "job id");
ABSL_FLAG(int, rank, 0, "this worker's rank");
ABSL_FLAG(int, workers, 4, "workers in the job");
ABSL_FLAG(int, clocks, 1000, "clocks to run");
ABSL_FLAG(int, staleness, 2, "the server's staleness bound, to check");
ABSL_FLAG(std::string, mode, "train",
          "train, bad, inspect, clock (one push and CLOCK(1), no pulls) or push (one push)");
ABSL_FLAG(std::string, coordinator, "",
          "train: declare the layer with this coordinator first (host:port)");

namespace leeway {
namespace {

constexpr uint32_t kElements = 4096;
constexpr float kStep = 1.0f / 1024;

#define CHECK_OR_FAIL(cond, what)                                  \
  do {                                                             \
    if (!(cond)) {                                                 \
      std::printf("WORKER FAILED rank %d: %s\n", rank, std::string(what).c_str()); \
      return 1;                                                    \
    }                                                              \
  } while (0)

std::vector<uint8_t> UpdatePayload(uint32_t rank, uint32_t clock) {
  std::vector<float> g(kElements, 0.0f);
  g[rank] = -kStep;  // SGD with lr 1: the value grows by kStep
  g[kElements - 1] = -kStep;
  CodecParams p;
  p.threads = 1;
  switch (clock % 4) {
    case 0: p.codec = CodecId::kNone; break;
    case 1: p.codec = CodecId::kFp16; break;
    case 2: p.codec = CodecId::kBf16; break;
    default:
      p.codec = CodecId::kTopK;
      p.density = 2.0f / kElements;  // exactly the two nonzeros
  }
  std::vector<uint8_t> payload;
  (void)Encode(g, {}, p, &payload);
  return payload;
}

// A batch of `payloads` for chunk (0, 0), or for `chunks` when given.
std::vector<uint8_t> Batch(const std::vector<std::vector<uint8_t>>& payloads,
                           std::vector<uint32_t> chunks = {}) {
  std::vector<uint8_t> batch;
  for (size_t i = 0; i < payloads.size(); ++i) {
    AppendPushBatchEntry(0, chunks.empty() ? 0 : chunks[i], payloads[i], &batch);
  }
  return batch;
}

// Pushes `update` at `clock`: alone on even clocks, else in a batch after
// which an all-zero update follows. Returns the pushes sent.
absl::StatusOr<uint32_t> PushUpdate(ServerClient& client, uint32_t clock,
                                    const std::vector<uint8_t>& update) {
  if (clock % 2 == 0) {
    absl::Status pushed = client.Wait(client.PushAsync(0, 0, clock, update));
    if (!pushed.ok()) return pushed;
    return 1;
  }
  std::vector<uint8_t> zeros;
  CodecParams fp16;
  fp16.codec = CodecId::kFp16;
  (void)Encode(std::vector<float>(kElements, 0.0f), {}, fp16, &zeros);
  const std::vector<uint8_t> batch = Batch({update, zeros});
  Ticket sent = client.PushBatchAsync(clock, 2, batch);
  absl::Status status = client.Wait(sent);
  if (!status.ok()) return status;
  auto results = ServerClient::PushBatchResults(sent, 2);
  if (!results.ok()) return results.status();
  for (const absl::StatusOr<uint64_t>& result : *results) {
    if (!result.ok()) return result.status();
  }
  if (*(*results)[1] <= *(*results)[0]) {
    return absl::InternalError("the batch's second push did not follow its first");
  }
  return 2;
}

// How many updates of each worker a copy holds (values are exact).
std::vector<int64_t> Counts(const ChunkCopy& copy, int workers) {
  std::vector<int64_t> counts;
  for (int u = 0; u < workers; ++u) {
    counts.push_back(std::llround(copy.values[u] / kStep));
  }
  return counts;
}

// Declares the test layer (SGD at lr 1) with the coordinator, whose shard
// map then tells the server about it; retried while servers register.
absl::Status DeclareLayer(const std::string& coordinator, const std::string& token) {
  auto stub = v1::Coordinator::NewStub(
      grpc::CreateChannel(coordinator, grpc::InsecureChannelCredentials()));
  v1::RegisterLayersRequest request;
  v1::LayerSpec* layer = request.add_layers();
  layer->set_id(0);
  layer->set_name("test.weight");
  layer->set_elements(kElements);
  layer->mutable_optimizer()->set_kind(v1::OptimizerSpec::KIND_SGD);
  layer->mutable_optimizer()->set_learning_rate(1.0f);
  grpc::Status status;
  for (int attempt = 0; attempt < 100; ++attempt) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + token);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ShardMap map;
    status = stub->RegisterLayers(&context, request, &map);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return status.ok() ? absl::OkStatus()
                     : absl::UnavailableError("RegisterLayers: " + status.error_message());
}

// Joins at clock 0 and sets the chunk's initial values (zeros) unless
// another worker did; 0 when both worked, else 1 with the reason printed.
int JoinAndInitialize(ServerClient& client, int rank) {
  absl::StatusOr<uint32_t> start = client.Join();
  CHECK_OR_FAIL(start.ok(), start.status().ToString());
  CHECK_OR_FAIL(*start == 0, absl::StrCat("joined at clock ", *start));
  // A server that follows a coordinator knows its chunks once it has the
  // shard map: until then the chunk is unknown, so retry for a while.
  absl::StatusOr<bool> init = client.InitializeWhenDeclared(
      0, 0, std::vector<float>(kElements, 0.0f), absl::Now() + absl::Seconds(10));
  CHECK_OR_FAIL(init.ok(), init.status().ToString());
  return 0;
}

int Train(ServerClient& client, int rank) {
  if (!absl::GetFlag(FLAGS_coordinator).empty()) {
    absl::Status declared =
        DeclareLayer(absl::GetFlag(FLAGS_coordinator), absl::GetFlag(FLAGS_token));
    CHECK_OR_FAIL(declared.ok(), declared.ToString());
  }
  const int workers = absl::GetFlag(FLAGS_workers);
  const int clocks = absl::GetFlag(FLAGS_clocks);
  const int s = absl::GetFlag(FLAGS_staleness);
  if (JoinAndInitialize(client, rank) != 0) return 1;
  ChunkCopy copy;
  // Receives the same changes as the copy (a trainer's parameter buffer):
  // the first reply is dense, so what it held before does not matter.
  std::vector<float> mirror(kElements, -1.0f);
  std::vector<float> short_mirror(kElements - 1);
  CHECK_OR_FAIL(client.Pull(0, 0, 0, kElements, &copy, nullptr, absl::MakeSpan(short_mirror))
                        .status()
                        .code() == absl::StatusCode::kInvalidArgument,
                "a pull with a mirror of the wrong size was not refused");
  CHECK_OR_FAIL(copy.values.empty(), "a refused pull changed the copy");
  int deltas = 0, not_modified = 0;
  ChunkCopy second;  // pulled in batches only
  for (int c = 0; c < clocks; ++c) {
    absl::StatusOr<PullForm> form;
    if (c % 2 == 0) {
      const ServerClient::PullRequest requests[] = {
          {0, 0, kElements, &copy, nullptr, absl::MakeSpan(mirror)}, {0, 0, kElements, &second}};
      auto forms = client.PullBatch(c, requests);
      CHECK_OR_FAIL(forms.ok() && (*forms)[1].ok(),
                    absl::StrCat("batch pull at ", c, ": ", forms.status().ToString()));
      form = (*forms)[0];
      for (int64_t count : Counts(second, workers)) {
        CHECK_OR_FAIL(count >= c - s && count <= clocks,
                      absl::StrCat("batch pull at clock ", c, " holds ", count, " updates"));
      }
    } else {
      form = client.Pull(0, 0, c, kElements, &copy, nullptr, absl::MakeSpan(mirror));
    }
    CHECK_OR_FAIL(form.ok(), absl::StrCat("pull at ", c, ": ", form.status().ToString()));
    CHECK_OR_FAIL(mirror == copy.values,
                  absl::StrCat("the mirror differs from the copy after the pull at ", c));
    deltas += *form == PullForm::kDelta;
    not_modified += *form == PullForm::kNotModified;
    const std::vector<int64_t> counts = Counts(copy, workers);
    for (int u = 0; u < workers; ++u) {
      const int64_t need = u == rank ? c : c - s;
      CHECK_OR_FAIL(counts[u] >= need && counts[u] <= clocks,
                    absl::StrCat("pull at clock ", c, " holds ", counts[u],
                                 " updates of worker ", u, ", needs ", need));
    }
    absl::StatusOr<uint32_t> pushed = PushUpdate(client, c, UpdatePayload(rank, c));
    CHECK_OR_FAIL(pushed.ok(), absl::StrCat("push at ", c, ": ", pushed.status().ToString()));
    absl::Status clocked = client.Clock(c + 1, *pushed);
    CHECK_OR_FAIL(clocked.ok(), absl::StrCat("clock ", c + 1, ": ", clocked.ToString()));
  }
  // Advance our own view past everyone's last update, then wait for them:
  // a pull at clocks + s needs min_clock >= clocks.
  for (int c = clocks + 1; c <= clocks + s; ++c) {
    absl::Status clocked = client.Clock(c, 0);
    CHECK_OR_FAIL(clocked.ok(), clocked.ToString());
  }
  absl::StatusOr<PullForm> last = client.Pull(0, 0, clocks + s, kElements, &copy);
  CHECK_OR_FAIL(last.ok(), last.status().ToString());
  for (int u = 0; u < workers; ++u) {
    CHECK_OR_FAIL(copy.values[u] == clocks * kStep,
                  absl::StrCat("final value of worker ", u, " is ", copy.values[u]));
  }
  CHECK_OR_FAIL(copy.values[kElements - 1] == float(workers) * clocks * kStep,
                absl::StrCat("final shared value ", copy.values[kElements - 1]));
  std::printf("WORKER OK rank %d clocks %d deltas %d not_modified %d\n", rank,
              clocks, deltas, not_modified);
  return 0;
}

int Bad(ServerClient& client, int rank, PeerId peer) {
  absl::StatusOr<uint32_t> start = client.Join();
  CHECK_OR_FAIL(start.ok(), start.status().ToString());
  ChunkCopy before;
  const uint32_t clock = *start;
  CHECK_OR_FAIL(client.Pull(0, 0, clock, kElements, &before).ok(), "first pull");
  auto refused = [&](const Ticket& t) { return !client.Wait(t).ok(); };
  const std::vector<uint8_t> good = UpdatePayload(rank, 0);
  CHECK_OR_FAIL(refused(client.PushAsync(9, 0, clock, good)), "unknown layer accepted");
  CHECK_OR_FAIL(refused(client.PushAsync(0, 7, clock, good)), "unknown chunk accepted");
  std::vector<float> small(10, 1.0f);
  std::vector<uint8_t> wrong_size;
  CodecParams none;
  (void)Encode(small, {}, none, &wrong_size);
  CHECK_OR_FAIL(refused(client.PushAsync(0, 0, clock, wrong_size)), "wrong size accepted");
  std::vector<uint8_t> garbage = good;
  garbage[20] ^= 0xFF;
  garbage[0] ^= 0xFF;
  CHECK_OR_FAIL(refused(client.PushAsync(0, 0, clock, garbage)), "garbage accepted");
  CHECK_OR_FAIL(refused(client.PushAsync(0, 0, clock + 5000, good)), "future clock accepted");
  // Batches: malformed ones are refused whole; a well-formed one answers
  // each entry, and refuses each bad one.
  const std::vector<uint8_t> two = Batch({good, good});
  CHECK_OR_FAIL(refused(client.PushBatchAsync(clock, 3, two)), "batch of a wrong count accepted");
  CHECK_OR_FAIL(refused(client.PushBatchAsync(clock, 0, {})), "empty batch accepted");
  std::vector<uint8_t> overrun = two;
  overrun[8] = 0xFF;  // the first entry's payload length
  CHECK_OR_FAIL(refused(client.PushBatchAsync(clock, 2, overrun)), "overrunning batch accepted");
  const std::vector<uint8_t> bad_entries =
      Batch({good, wrong_size, garbage, std::vector<uint8_t>(5, 0)}, {7, 0, 0, 0});
  Ticket answered = client.PushBatchAsync(clock, 4, bad_entries);
  CHECK_OR_FAIL(client.Wait(answered).ok(), "a well-formed batch refused whole");
  auto results = ServerClient::PushBatchResults(answered, 4);
  CHECK_OR_FAIL(results.ok(), results.status().ToString());
  CHECK_OR_FAIL((*results)[0].status().code() == absl::StatusCode::kNotFound,
                "batch entry for an unknown chunk: " + (*results)[0].status().ToString());
  CHECK_OR_FAIL(!(*results)[1].ok() && !(*results)[2].ok() && !(*results)[3].ok(),
                "bad batch entries accepted");
  // Pull batches: a malformed one is refused whole; an unknown chunk's
  // entry is refused alone.
  std::vector<uint8_t> pull_batch;
  AppendPullBatchEntry({0, 0, ~uint64_t{0}}, &pull_batch);
  WireHeader pull_header;
  pull_header.kind = MessageKind::kPullBatch;
  pull_header.clock = clock;
  pull_header.element_count = 2;  // one entry sent
  CHECK_OR_FAIL(!client.transport()
                     ->Wait(client.transport()->Call(peer, pull_header, pull_batch, {},
                                                     absl::Now() + absl::Seconds(10)))
                     .ok(),
                "a pull batch of the wrong size accepted");
  // One whose answers could outgrow a message (4096 x 16 KiB dense).
  std::vector<uint8_t> huge;
  for (uint32_t i = 0; i < kMaxBatchEntries; ++i) AppendPullBatchEntry({0, 0, 0}, &huge);
  pull_header.element_count = kMaxBatchEntries;
  Ticket too_big =
      client.transport()->Call(peer, pull_header, huge, {}, absl::Now() + absl::Seconds(10));
  absl::Status too_big_status = client.transport()->Wait(too_big);
  CHECK_OR_FAIL(too_big_status.code() == absl::StatusCode::kInvalidArgument,
                "a pull batch too big to answer: " + too_big_status.ToString());
  ChunkCopy unknown, known;
  const ServerClient::PullRequest mixed[] = {{0, 9, kElements, &unknown},
                                             {0, 0, kElements, &known}};
  auto pulled = client.PullBatch(clock, mixed);
  CHECK_OR_FAIL(pulled.ok(), pulled.status().ToString());
  CHECK_OR_FAIL((*pulled)[0].status().code() == absl::StatusCode::kNotFound,
                "pull batch entry of an unknown chunk: " + (*pulled)[0].status().ToString());
  CHECK_OR_FAIL((*pulled)[1].ok() && known.values == before.values,
                "pull batch entry of a known chunk: " + (*pulled)[1].status().ToString());
  CHECK_OR_FAIL(client.Clock(clock + 1, 0).ok(), "a good CLOCK refused");
  CHECK_OR_FAIL(!client.Clock(clock + 1, 0).ok(), "duplicated CLOCK accepted");
  CHECK_OR_FAIL(!client.Clock(clock, 0).ok(), "CLOCK going backwards accepted");
  CHECK_OR_FAIL(refused(client.PushAsync(0, 0, clock, good)), "push for a closed clock accepted");
  ChunkCopy after;
  CHECK_OR_FAIL(client.Pull(0, 0, clock, kElements, &after).ok(), "server gone after bad input");
  CHECK_OR_FAIL(after.values == before.values && after.version == before.version,
                "a refused push changed the chunk");
  std::printf("WORKER OK rank %d bad input refused\n", rank);
  return 0;
}

int Inspect(ServerClient& client, int rank) {
  absl::StatusOr<uint32_t> start = client.Join();
  CHECK_OR_FAIL(start.ok(), start.status().ToString());
  ChunkCopy copy;
  absl::StatusOr<PullForm> form = client.Pull(0, 0, *start, kElements, &copy);
  CHECK_OR_FAIL(form.ok(), form.status().ToString());
  const int workers = absl::GetFlag(FLAGS_workers);
  int64_t total = 0;
  for (int64_t count : Counts(copy, workers)) {
    CHECK_OR_FAIL(count >= 0, "negative count");
    total += count;
  }
  for (int u = 0; u < workers; ++u) {
    CHECK_OR_FAIL(copy.values[u] == std::llround(copy.values[u] / kStep) * kStep,
                  "a count is not whole");
  }
  CHECK_OR_FAIL(copy.values[kElements - 1] == float(total) * kStep,
                absl::StrCat("shared element ", copy.values[kElements - 1] / kStep,
                             " != sum of counts ", total));
  std::printf("WORKER OK rank %d inspect total=%lld version=%llu\n", rank,
              static_cast<long long>(total),
              static_cast<unsigned long long>(copy.version));
  return 0;
}

// Joins, pushes one update for clock 0 and pulls nothing; with `clock`
// then sends CLOCK(1). A server with top-k pulls publishes clock 1 on its
// own: once every worker it counts has pushed, or at the first CLOCK(1).
int PushWithoutPulls(ServerClient& client, int rank, bool clock) {
  if (JoinAndInitialize(client, rank) != 0) return 1;
  absl::Status pushed = client.Wait(client.PushAsync(0, 0, 0, UpdatePayload(rank, 0)));
  CHECK_OR_FAIL(pushed.ok(), pushed.ToString());
  if (clock) {
    absl::Status clocked = client.Clock(1, 1);
    CHECK_OR_FAIL(clocked.ok(), clocked.ToString());
  }
  std::printf("WORKER OK rank %d %s\n", rank, clock ? "clock" : "push");
  return 0;
}

int Main() {
  const int rank = absl::GetFlag(FLAGS_rank);
  TransportOptions options;
  options.job_id = absl::GetFlag(FLAGS_job);
  options.rank = static_cast<uint32_t>(rank);
  options.token = absl::GetFlag(FLAGS_token);
  auto transport = Transport::Create(options);
  CHECK_OR_FAIL(transport.ok(), transport.status().ToString());
  auto peer = ConnectFromReadyFile(transport->get(), absl::GetFlag(FLAGS_server_file),
                                   absl::GetFlag(FLAGS_via));
  CHECK_OR_FAIL(peer.ok(), peer.status().ToString());
  LEEWAY_LOG(INFO) << "worker " << rank << " connected over "
                   << (*transport)->PeerTransportName(*peer).value_or("?");
  ServerClient client(transport->get(), *peer, absl::Seconds(60));
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode == "bad") return Bad(client, rank, *peer);
  if (mode == "inspect") return Inspect(client, rank);
  if (mode == "clock" || mode == "push") return PushWithoutPulls(client, rank, mode == "clock");
  return Train(client, rank);
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return leeway::Main();
}
