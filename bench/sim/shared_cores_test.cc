#include "bench/sim/shared_cores.h"

#include <limits>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace sim {
namespace {

TEST_CASE("a short job behind a long one shares the core and ends first") {
  // One core. At 0, process 0 starts 2 s of work and process 1 0.5 s: each
  // runs at half speed, so 1 ends at 1.0 s (0.5 s of work done by 0), then 0
  // runs alone and ends at 1.0 + 1.5 = 2.5 s.
  SharedCores cpu(1, 2);
  cpu.Submit(0, 0, 2.0, 10);
  cpu.Submit(0, 1, 0.5, 11);
  CHECK(cpu.NextEnd() == Approx(1.0));
  CHECK(cpu.AdvanceTo(0.9).empty());
  std::vector<SharedCores::Done> done = cpu.AdvanceTo(3);
  REQUIRE(done.size() == 2);
  CHECK(done[0].token == 11);
  CHECK(done[0].t == Approx(1.0));
  CHECK(done[1].token == 10);
  CHECK(done[1].t == Approx(2.5));
  CHECK(cpu.NextEnd() == std::numeric_limits<double>::infinity());
}

TEST_CASE("a process runs its own jobs one after another") {
  // Two cores, one process with two 1 s jobs and another with one: the
  // second process never waits; the first one's jobs end at 1 and 2 s.
  SharedCores cpu(2, 2);
  cpu.Submit(0, 0, 1, 1);
  cpu.Submit(0, 0, 1, 2);
  cpu.Submit(0.5, 1, 1, 3);
  std::vector<SharedCores::Done> done = cpu.AdvanceTo(10);
  REQUIRE(done.size() == 3);
  CHECK(done[0].token == 1);
  CHECK(done[0].t == Approx(1));
  CHECK(done[1].token == 3);
  CHECK(done[1].t == Approx(1.5));
  CHECK(done[2].token == 2);
  CHECK(done[2].t == Approx(2));
}

TEST_CASE("three jobs on two cores each get two thirds of one") {
  // 1 s each, all at 0: all three end at 1.5 s, together.
  SharedCores cpu(2, 3);
  for (int p = 0; p < 3; ++p) cpu.Submit(0, p, 1, p);
  CHECK(cpu.NextEnd() == Approx(1.5));
  std::vector<SharedCores::Done> done = cpu.AdvanceTo(1.5);
  REQUIRE(done.size() == 3);
  for (const SharedCores::Done& d : done) CHECK(d.t == Approx(1.5));
}

TEST_CASE("no shared cores: every process at full speed; empty jobs end at once") {
  SharedCores cpu(0, 3);
  for (int p = 0; p < 3; ++p) cpu.Submit(1, p, 2, p);
  cpu.Submit(1, 2, 0, 7);
  std::vector<SharedCores::Done> done = cpu.AdvanceTo(3);
  REQUIRE(done.size() == 4);
  for (int i = 0; i < 3; ++i) CHECK(done[i].t == Approx(3));
  CHECK(done[3].token == 7);
  CHECK(done[3].t == Approx(3));
}

}  // namespace
}  // namespace sim
}  // namespace leeway
