#include "bench/perftest.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("ucx_perftest's Final line is parsed") {
  const std::string output =
      "+------+\n"
      "Final:                   200     48.610    53.190    53.190    "
      "18800.53   18800.53       18801       18801\n";
  auto r = ParsePerftestOutput(output);
  REQUIRE(r.ok());
  CHECK(r->latency_us == Approx(53.19));
  CHECK(r->bandwidth_mbps == Approx(18800.53));
  CHECK(r->message_rate == Approx(18801));
  CHECK_FALSE(ParsePerftestOutput("no result\n").ok());
  CHECK_FALSE(ParsePerftestOutput("Final: 1 2\n").ok());
}

}  // namespace
}  // namespace leeway
