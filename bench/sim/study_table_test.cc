#include "bench/sim/study_table.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace sim {
namespace {

constexpr char kTable[] =
    "Workload resnet50 (100 ms GPU per iteration), 2 servers, 4 workers, 16 clocks (plans every 4), netlab\n"
    "\n"
    "| workers | configuration | pipelining | samples/s | / BSP | comm share | / BSP | bytes/iter | / BSP | staleness p99 | compression |\n"
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    "| equal | bsp-none | on | 36.4 | 1.00 | 94.5% | 1.00 | 204461664 | 1.000 | 1.0 | 1.0x |\n"
    "| stragglers | ssp2-adaptive | off | 53.3 | 1.46 | 93.4% | 0.99 | 178980843 | 0.875 | 2.0 | 1.2x |\n";

TEST_CASE("a study table's workload and rows") {
  auto t = ParseStudyTable(kTable);
  REQUIRE(t.ok());
  CHECK(t->workload == "resnet50");
  CHECK(t->gpu_ms == 100);
  CHECK(t->servers == 2);
  CHECK(t->workers == 4);
  CHECK(t->clocks == 16);
  CHECK(t->batch == 32);  // tables from before the batch was in the header
  REQUIRE(t->rows.size() == 2);
  CHECK_FALSE(t->rows[0].stragglers);
  CHECK(t->rows[0].configuration == "bsp-none");
  CHECK(t->rows[0].overlap);
  CHECK(t->rows[0].samples_per_s == Approx(36.4));
  CHECK(t->rows[0].comm_share == Approx(0.945));
  CHECK(t->rows[0].bytes_per_iteration == Approx(204461664));
  CHECK(t->rows[0].staleness_p99 == 1);
  CHECK(t->rows[1].stragglers);
  CHECK_FALSE(t->rows[1].overlap);
  CHECK(t->rows[1].staleness_p99 == 2);
}

TEST_CASE("a study table names its batch") {
  std::string with_batch = kTable;
  with_batch.replace(with_batch.find("2 servers"), 0, "batch 256, ");
  auto t = ParseStudyTable(with_batch);
  REQUIRE(t.ok());
  CHECK(t->batch == 256);
  CHECK(t->servers == 2);
  CHECK(t->clocks == 16);
  with_batch.replace(with_batch.find("batch 256"), 9, "batch 0");
  CHECK_FALSE(ParseStudyTable(with_batch).ok());
}

TEST_CASE("a malformed study table is an error naming the line") {
  CHECK_FALSE(ParseStudyTable("").ok());
  CHECK_FALSE(ParseStudyTable("Workload resnet50 (fast), 2 servers\n").ok());
  std::string bad = kTable;
  bad.replace(bad.find("36.4"), 4, "many");
  const auto r = ParseStudyTable(bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("line 5") != absl::string_view::npos);
  std::string bad_staleness = kTable;
  bad_staleness.replace(bad_staleness.find("| 1.0 | 1.0x"), 6, "| high");
  const auto s = ParseStudyTable(bad_staleness);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("staleness") != absl::string_view::npos);
  std::string no_rows = kTable;
  no_rows = no_rows.substr(0, no_rows.find("| equal"));
  CHECK_FALSE(ParseStudyTable(no_rows).ok());
}

}  // namespace
}  // namespace sim
}  // namespace leeway
