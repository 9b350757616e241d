#include "bench/sim/fair_links.h"

#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
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

TEST_CASE("weighted connections split a full link by weight; the cap still binds") {
  // Into link 2 (100 B/s): weights 1 and 3 get 25 and 75 B/s; with a cap
  // of 60 the heavy one stops at 60 and the other takes the 40 left.
  FairLinks links({100, 100, 100}, 0);
  links.Submit(0, 0, 2, 1000, 1, 1);
  links.Submit(0, 1, 2, 1000, 2, 3);
  CHECK(links.RateOf(0, 2) == Approx(25));
  CHECK(links.RateOf(1, 2) == Approx(75));
  FairLinks capped({100, 100, 100}, 60);
  capped.Submit(0, 0, 2, 1000, 1, 1);
  capped.Submit(0, 1, 2, 1000, 2, 3);
  CHECK(capped.RateOf(0, 2) == Approx(40));
  CHECK(capped.RateOf(1, 2) == Approx(60));
  // Alone, a connection's weight changes nothing.
  FairLinks alone({100, 100}, 80);
  alone.Submit(0, 0, 1, 1000, 1, 0.5);
  CHECK(alone.RateOf(0, 1) == Approx(80));
}

TEST_CASE("weights move who finishes first, not when the link is through") {
  // 100 bytes each from two senders into one 100 B/s link, weights 1 and
  // 3: the heavy one is through at 100 / 75 s, the other at 2 s, as with
  // equal weights.
  FairLinks links({100, 100, 100}, 0);
  links.Submit(0, 0, 2, 100, 1, 1);
  links.Submit(0, 1, 2, 100, 2, 3);
  std::vector<FairLinks::Done> done = links.AdvanceTo(10);
  REQUIRE(done.size() == 2);
  CHECK(done[0].token == 2);
  CHECK(done[0].t == Approx(100.0 / 75));
  CHECK(done[1].t == Approx(2));
}

TEST_CASE("the spread of equal flows' finishes grows with the weights' spread") {
  CHECK(MeanFirstToLast(4, 0, 10) == Approx(1));
  CHECK(MeanFirstToLast(1, 0.5, 10) == Approx(1));
  const double mild = MeanFirstToLast(4, 0.2, 4000);
  const double wide = MeanFirstToLast(4, 0.6, 4000);
  CHECK(mild < 1);
  CHECK(wide < mild);
  // Four weights uniform in 1 +- s: the first is through at sum / (4 max),
  // about 1 / (1 + 0.6 s) (the largest of four averages 1 + 0.6 s).
  CHECK(mild == Approx(1 / 1.12).epsilon(0.02));
  CHECK(wide == Approx(1 / 1.36).epsilon(0.03));
}

TEST_CASE("unfairness by size: interpolated in log bytes, held beyond the points") {
  Unfairness none;
  CHECK(none.SpreadAt(1e6) == 0);
  Unfairness u{{{1 << 20, 0.9}, {1 << 24, 0.3}}};
  CHECK(u.SpreadAt(1000) == Approx(0.9));
  CHECK(u.SpreadAt(1 << 20) == Approx(0.9));
  CHECK(u.SpreadAt(1 << 22) == Approx(0.6));  // halfway in log bytes
  CHECK(u.SpreadAt(1 << 24) == Approx(0.3));
  CHECK(u.SpreadAt(1e12) == Approx(0.3));
}

TEST_CASE("unfairness fitted to measured spreads; bad text refused") {
  auto u = UnfairnessFromSpreads("1048576:0.2,4194304:0.738,16777216:1");
  REQUIRE(u.ok());
  REQUIRE(u->points.size() == 3);
  CHECK(u->points[0].second == Approx(0.95));              // wider than weights allow: the most
  CHECK(u->points[1].second == Approx(0.6).margin(0.02));  // MeanFirstToLast(4, 0.6) is 0.738
  CHECK(u->points[2].second == Approx(0).margin(1e-5));
  CHECK(u->ToString() == "1 MiB +-0.95, 4 MiB +-" +
                             absl::StrCat(absl::SixDigits(u->points[1].second)) + ", 16 MiB +-" +
                             absl::StrCat(absl::SixDigits(u->points[2].second)));
  CHECK(UnfairnessFromSpreads("")->points.empty());
  CHECK_FALSE(UnfairnessFromSpreads("4194304:0.7,1048576:0.6").ok());  // not ascending
  CHECK_FALSE(UnfairnessFromSpreads("4194304:1.5").ok());
  CHECK_FALSE(UnfairnessFromSpreads("4194304").ok());
  CHECK_FALSE(UnfairnessFromSpreads("big:0.7").ok());
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
