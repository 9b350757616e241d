// SSP semantics end to end through ServerCore, deterministic and
// in-process: workers of different speeds run a scripted schedule; every
// update is a distinct power of two (worker w at clock t adds 2^t to
// element w), so a pulled chunk says exactly which updates it includes.
// Pushes are delivered late and out of order with respect to CLOCKs.
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec.h"
#include "server/server_core.h"

namespace leeway {
namespace {

constexpr uint32_t kWorkers = 4;
constexpr uint32_t kClocks = 20;  // 2^19 and sums below 2^20 are exact in fp32

std::vector<uint8_t> UpdatePayload(uint32_t worker, uint32_t clock) {
  std::vector<float> g(kWorkers, 0.0f);
  g[worker] = -static_cast<float>(1u << clock);  // SGD, lr 1: p += 2^clock
  CodecParams dense;
  dense.codec = CodecId::kNone;
  std::vector<uint8_t> payload;
  REQUIRE(Encode(g, {}, dense, &payload).ok());
  return payload;
}

struct Worker {
  uint32_t clock = 0;
  bool waiting = false;              // its pull is parked
  std::optional<std::vector<float>> answer;  // the pull's chunk, once answered
  std::deque<uint32_t> in_flight;    // stamps of pushes not yet delivered
};

struct Simulation {
  explicit Simulation(int64_t staleness, uint64_t seed)
      : staleness(staleness), core(ServerCoreOptions{staleness}), rng(seed) {
    OptimizerConfig sgd;
    sgd.learning_rate = 1.0f;
    REQUIRE(core.AddChunk({0, 0, 0, kWorkers}, sgd).ok());
    REQUIRE(*core.Initialize(0, 0, std::vector<float>(kWorkers, 0.0f)));
    for (uint32_t w = 0; w < kWorkers; ++w) core.Join(w);
  }

  // What the test knows is applied: pushes delivered, per worker and clock.
  bool Applied(uint32_t w, uint32_t t) const { return applied[w] > t; }

  // The condition, from the test's own bookkeeping: every worker's clocks
  // below c - s fully applied, and the reader's own below c.
  bool ConditionHolds(uint32_t w, uint32_t c) const {
    if (staleness == SspTracker::kAsync) return true;
    for (uint32_t u = 0; u < kWorkers; ++u) {
      const int64_t need = u == w ? c : int64_t{c} - staleness;
      if (!dead[u] && int64_t{applied[u]} < need) return false;
    }
    return true;
  }

  void CheckAnswer(uint32_t w, uint32_t c, const std::vector<float>& p) {
    for (uint32_t u = 0; u < kWorkers; ++u) {
      const auto bits = static_cast<uint32_t>(p[u]);
      REQUIRE(static_cast<float>(bits) == p[u]);
      for (uint32_t t = 0; t < kClocks; ++t) {
        const bool included = (bits >> t) & 1u;
        if (included) REQUIRE(Applied(u, t));  // nothing from nowhere
        // ASP promises nothing, not even the reader's own writes.
        const bool required =
            staleness != SspTracker::kAsync && !dead[u] &&
            ((u == w && t < c) || int64_t{t} <= int64_t{c} - staleness - 1);
        if (required) {
          INFO("worker " << w << " clock " << c << " misses update (" << u
                         << ", " << t << ")");
          REQUIRE(included);
        }
      }
    }
  }

  void StartPull(uint32_t w) {
    Worker& me = workers[w];
    const uint32_t c = me.clock;
    const bool holds = ConditionHolds(w, c);
    me.waiting = true;
    bool answered_now = true;
    core.Pull(w, 0, 0, c, kNoVersion, absl::InfiniteFuture(),
              [this, w, c, &answered_now](absl::StatusOr<PullReply> reply) {
                REQUIRE(reply.ok());
                std::vector<float> p(kWorkers);
                REQUIRE(Decode(reply->payload(), absl::MakeSpan(p)).ok());
                CheckAnswer(w, c, p);
                workers[w].waiting = false;
                workers[w].answer = p;
                (void)answered_now;
              });
    // Never waits when the condition already holds.
    if (holds) REQUIRE_FALSE(me.waiting);
    ++pulls;
    if (me.waiting) ++parked;
  }

  // One step of worker w: pull (if not yet answered), else push and CLOCK.
  void Step(uint32_t w) {
    Worker& me = workers[w];
    if (!me.answer) {
      StartPull(w);
      return;
    }
    me.answer.reset();
    me.in_flight.push_back(me.clock);  // its push travels slowly
    REQUIRE(core.Clock(w, me.clock + 1, 1).ok());
    ++me.clock;
  }

  void DeliverOne(uint32_t w) {
    Worker& me = workers[w];
    const uint32_t t = me.in_flight.front();
    me.in_flight.pop_front();
    applied[w] = t + 1;
    REQUIRE(core.Push(w, 0, 0, t, UpdatePayload(w, t)).ok());
  }

  void Run() {
    // Worker w is picked with weight w + 1: four speeds.
    std::discrete_distribution<uint32_t> pick({1, 2, 3, 4});
    std::bernoulli_distribution deliver(0.4);
    for (int guard = 0; guard < 100000; ++guard) {
      bool all_done = true;
      for (const Worker& w : workers) {
        all_done &= w.clock >= kClocks && w.in_flight.empty();
      }
      if (all_done) return;
      const uint32_t w = pick(rng);
      Worker& me = workers[w];
      if (!me.in_flight.empty() && (deliver(rng) || me.waiting || me.clock >= kClocks)) {
        DeliverOne(w);
      } else if (!me.waiting && me.clock < kClocks) {
        Step(w);
      }
    }
    FAIL("the simulation did not finish: a pull was never answered");
  }

  const int64_t staleness;
  ServerCore core;
  std::mt19937_64 rng;
  Worker workers[kWorkers];
  uint32_t applied[kWorkers] = {};
  bool dead[kWorkers] = {};
  int pulls = 0;
  int parked = 0;
};

TEST_CASE("SSP pulls include exactly what the staleness bound requires") {
  for (int64_t s : {int64_t{0}, int64_t{1}, int64_t{3}, SspTracker::kAsync}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      INFO("staleness " << s << " seed " << seed);
      Simulation sim(s, seed);
      sim.Run();
      CHECK(sim.pulls >= int(kWorkers * kClocks));
      if (s == SspTracker::kAsync) CHECK(sim.parked == 0);
      if (s == 0) CHECK(sim.parked > 0);
      // Every update was applied once: element w holds 2^kClocks - 1.
      auto final_reply = sim.core.FindChunk(0, 0);
      REQUIRE(final_reply.ok());
      for (float x : (*final_reply)->Snapshot().params) {
        CHECK(x == static_cast<float>((1u << kClocks) - 1));
      }
      const HistogramSnapshot staleness = sim.core.Staleness();
      CHECK(staleness.count == kWorkers * kClocks);
      if (s >= 0) CHECK(staleness.max <= double(s) + 1 + kClocks);
    }
  }
}

TEST_CASE("a dead worker releases the pulls that wait for it") {
  Simulation sim(0, 7);
  // Worker 3 pushes nothing and its CLOCK never comes; the others block.
  for (uint32_t w = 0; w < 3; ++w) {
    sim.Step(w);                 // pull at clock 0: answered
    sim.Step(w);                 // push + CLOCK(1)
    sim.DeliverOne(w);
    sim.Step(w);                 // pull at clock 1: parked
    CHECK(sim.workers[w].waiting);
  }
  sim.dead[3] = true;
  sim.core.Leave(3);
  for (uint32_t w = 0; w < 3; ++w) CHECK_FALSE(sim.workers[w].waiting);
}

}  // namespace
}  // namespace leeway
