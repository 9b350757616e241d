#include "cli/launch_report.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("worker results are parsed and folded into a summary") {
  auto a = ParseWorkerResult(
      "{\"rank\": 0, \"clocks\": 100, \"test_accuracy\": 0.96, \"samples_per_sec\": 100.5, "
      "\"comm_share\": 0.2, \"pull_wait_share\": 0.05, \"bytes_per_iter\": 1000, "
      "\"messages_per_iter\": 40, "
      "\"compression_ratio\": 10}\n");
  auto b = ParseWorkerResult(
      "{\"rank\": 1, \"clocks\": 100, \"test_accuracy\": 0.94, \"samples_per_sec\": 99.5, "
      "\"comm_share\": 0.4, \"pull_wait_share\": 0.15, \"bytes_per_iter\": 3000, "
      "\"messages_per_iter\": 60, "
      "\"compression_ratio\": 20}");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  LaunchSummary s = Summarize({*a, *b});
  CHECK(s.test_accuracy == Approx(0.95));
  CHECK(s.test_accuracy_min == Approx(0.94));
  CHECK(s.samples_per_sec == Approx(200));
  CHECK(s.comm_share == Approx(0.3));
  CHECK(s.pull_wait_share == Approx(0.1));
  CHECK(s.bytes_per_iter == Approx(2000));
  CHECK(s.messages_per_iter == Approx(50));
  CHECK(s.compression_ratio == Approx(15));
  const std::string json = SummaryJson(s);
  for (const char* key : {"\"test_accuracy\"", "\"samples_per_sec\"", "\"comm_share\"",
                          "\"bytes_per_iter\"", "\"staleness_p99\"", "\"compression_ratio\""}) {
    CHECK(json.find(key) != std::string::npos);
  }
  CHECK(SummaryTable(s).find("95.00%") != std::string::npos);
}

TEST_CASE("malformed worker results are refused") {
  CHECK_FALSE(ParseWorkerResult("").ok());
  CHECK_FALSE(ParseWorkerResult("{\"rank\": 0}").ok());
  CHECK_FALSE(ParseWorkerResult("{\"rank\": zero, \"test_accuracy\": 1, \"samples_per_sec\": 1}").ok());
  CHECK_FALSE(ParseWorkerResult("[1, 2]").ok());
}

TEST_CASE("a summary survives its JSON form, commas and quotes in the name included") {
  LaunchSummary s;
  s.run = "SSP s=2, \"adaptive\"";
  s.clocks = 1000;
  s.test_accuracy = 0.955;
  s.samples_per_sec = 9000;
  s.comm_share = 0.25;
  s.pull_wait_share = 0.125;
  s.bytes_per_iter = 170000;
  s.messages_per_iter = 342.5;
  s.staleness_p99 = 3;
  s.compression_ratio = 13.5;
  auto back = ParseSummary(SummaryJson(s));
  INFO(SummaryJson(s));
  REQUIRE(back.ok());
  CHECK(back->run == s.run);
  CHECK(back->clocks == 1000);
  CHECK(back->test_accuracy == Approx(0.955));
  CHECK(back->comm_share == Approx(0.25));
  CHECK(back->pull_wait_share == Approx(0.125));
  CHECK(back->messages_per_iter == Approx(342.5));
  CHECK(back->compression_ratio == Approx(13.5));
  CHECK_FALSE(ParseSummary("{\"run\": \"x\"}").ok());
  CHECK_FALSE(ParseSummary("{\"run\": \"unterminated}").ok());
}

TEST_CASE("history lines become plot points; the plot names every run") {
  auto points = ParseHistory("0.5,10,2.3,-1\nnot a line\n1.0,20,1.5,0.81\n");
  REQUIRE(points.size() == 2);
  CHECK(points[1].clock == 20);
  CHECK(points[1].accuracy == Approx(0.81));
  const std::string svg = PlotSvg({{"BSP, none", points}, {"SSP <2>", points}});
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("BSP, none") != std::string::npos);
  CHECK(svg.find("SSP &lt;2&gt;") != std::string::npos);
  CHECK(svg.find("<polyline") != std::string::npos);
  // A later run adds its line to the same file.
  auto again = PlotSeriesIn(svg);
  REQUIRE(again.size() == 2);
  CHECK(again[0].label == "BSP, none");
  CHECK(again[1].label == "SSP <2>");
  REQUIRE(again[1].points.size() == 2);
  CHECK(again[1].points[1].accuracy == Approx(0.81));
  CHECK(again[1].points[0].seconds == Approx(0.5));
  CHECK(PlotSeriesIn("<svg></svg>").empty());
  auto labelled = PlotSeriesIn(PlotSvg({{"a--b", {}}}));
  REQUIRE(labelled.size() == 1);
  CHECK(labelled[0].label == "a--b");
}

}  // namespace
}  // namespace leeway
