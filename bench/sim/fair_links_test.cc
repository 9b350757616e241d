#include "bench/sim/fair_links.h"

#include <limits>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace sim {
namespace {

TEST_CASE("two senders into one receiver split it, then the rest speeds up") {
  // Links 0 and 1 send, 2 receives, 100 B/s each. 100 and 50 bytes at 0:
  // 50 B/s each, the 50 bytes are through at 1 s; the other 50 bytes then
  // go at 100 B/s: through at 1.5 s.
  FairLinks links({100, 100, 100}, 0);
  links.Submit(0, 0, 2, 100, 1);
  links.Submit(0, 1, 2, 50, 2);
  CHECK(links.RateOf(0, 2) == Approx(50));
  CHECK(links.NextEnd() == Approx(1));
  std::vector<FairLinks::Done> done = links.AdvanceTo(10);
  REQUIRE(done.size() == 2);
  CHECK(done[0].token == 2);
  CHECK(done[0].t == Approx(1));
  CHECK(done[1].token == 1);
  CHECK(done[1].t == Approx(1.5));
  CHECK(links.NextEnd() == std::numeric_limits<double>::infinity());
}

TEST_CASE("max-min: a slow receiver's share goes to the other connection") {
  // Link 0 sends to 1 (100 B/s) and to 2 (30 B/s): 0 -> 2 is held to 30 by
  // link 2, and 0 -> 1 gets the 70 that link 0 has left.
  FairLinks links({100, 100, 30}, 0);
  links.Submit(0, 0, 1, 1000, 1);
  links.Submit(0, 0, 2, 1000, 2);
  CHECK(links.RateOf(0, 2) == Approx(30));
  CHECK(links.RateOf(0, 1) == Approx(70));
}

TEST_CASE("one connection's messages go in order; a connection has a cap") {
  // 100 B/s links, one connection capped at 80 B/s: 160 bytes then 80
  // bytes are through at 2 s and 3 s. Queued after the first, the second
  // does not share with it.
  FairLinks links({100, 100}, 80);
  links.Submit(0, 0, 1, 160, 1);
  links.Submit(0.5, 0, 1, 80, 2);
  CHECK(links.RateOf(0, 1) == Approx(80));
  std::vector<FairLinks::Done> done = links.AdvanceTo(2.5);
  REQUIRE(done.size() == 1);
  CHECK(done[0].t == Approx(2));
  done = links.AdvanceTo(5);
  REQUIRE(done.size() == 1);
  CHECK(done[0].token == 2);
  CHECK(done[0].t == Approx(3));
}

TEST_CASE("empty messages are through at once; a send reports what ended before it") {
  FairLinks links({100, 100}, 0);
  links.Submit(0, 0, 1, 100, 1);
  std::vector<FairLinks::Done> done = links.Submit(2, 1, 0, 0, 2);
  REQUIRE(done.size() == 1);
  CHECK(done[0].token == 1);
  CHECK(done[0].t == Approx(1));
  done = links.AdvanceTo(2);
  REQUIRE(done.size() == 1);
  CHECK(done[0].token == 2);
  CHECK(done[0].t == Approx(2));
}

TEST_CASE("many small messages late in a long run all arrive") {
  // Rounding at large times must not stall a header-sized message.
  FairLinks links({125e6, 125e6}, 105e6);
  double t = 1000;
  std::vector<FairLinks::Done> through;
  for (int i = 0; i < 1000; ++i) {
    for (const FairLinks::Done& d : links.Submit(t, 0, 1, 64, i)) through.push_back(d);
    t += 1e-7;
  }
  for (const FairLinks::Done& d : links.AdvanceTo(2000)) through.push_back(d);
  REQUIRE(through.size() == 1000);
  // One connection at its cap, always busy: 1000 x 64 bytes at 105e6 B/s
  // from t = 1000 on.
  CHECK(through.back().t == Approx(1000 + 64000 / 105e6).epsilon(1e-12));
  CHECK(links.NextEnd() == std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace sim
}  // namespace leeway
