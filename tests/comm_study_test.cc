// The communication study's driver on loopback with tiny sizes (the real
// study runs in bench/netlab's namespaces, which need root): it runs the
// baseline and a compressed configuration through `leeway launch`, and
// writes a table of ratios to the baseline and a bar chart; on MNIST also
// test accuracy against time, a line per configuration.
// The MNIST case needs LEEWAY_MNIST_DIR (deploy/test.sh sets it).
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "cli/launch_report.h"
#include "core/common/file_text.h"
#include "tests/subprocess.h"

namespace leeway {
namespace {

using testing::LoopbackUcxEnvironment;
using testing::MakeTempDir;
using testing::RunfilePath;
using testing::Subprocess;

// Runs comm_study with `flags`, writing <dir>/study.*; fails the test
// unless it exits 0.
void RunStudy(const std::string& dir, std::vector<std::string> flags) {
  // bin_dir: the runfiles tree holds cli/leeway, worker/leeway-worker, ...
  std::string bin = RunfilePath("cli/leeway");
  bin = bin.substr(0, bin.size() - std::string("/cli/leeway").size());
  flags.insert(flags.begin(), RunfilePath("bench/comm_study"));
  flags.push_back("--bin_dir=" + bin);
  flags.push_back("--work_dir=" + dir + "/runs");
  flags.push_back("--out=" + dir + "/study");
  auto study = Subprocess::Start(flags, LoopbackUcxEnvironment(), dir + "/study.log");
  REQUIRE(study.ok());
  absl::StatusOr<int> code = (*study)->Wait(absl::Now() + absl::Minutes(5));
  INFO((*study)->Output());
  REQUIRE(code.ok());
  REQUIRE(*code == 0);
}

TEST_CASE("the study driver compares a configuration with BSP uncompressed") {
  const std::string dir = MakeTempDir("comm_study");
  RunStudy(dir, {"--workload=resnet50", "--clocks=3", "--warmup_clocks=1", "--gpu_ms=10",
                 "--configs=bsp-topk",
                 "--speeds=stragglers", "--overlap=on"});
  const std::string md = ReadFileOrEmpty(dir + "/study.md");
  std::vector<std::string> rows;
  for (const std::string& line : std::vector<std::string>(absl::StrSplit(md, '\n'))) {
    if (line.rfind("| stragglers |", 0) == 0) rows.push_back(line);
  }
  REQUIRE(rows.size() == 2);
  // "| speeds | config | pipelining | samples/s | / BSP | comm | / BSP | bytes | / BSP | ..."
  std::vector<std::string> base = absl::StrSplit(rows[0], " | ");
  std::vector<std::string> topk = absl::StrSplit(rows[1], " | ");
  REQUIRE(base.size() >= 11);
  REQUIRE(topk.size() >= 11);
  CHECK(base[1] == "bsp-none");
  CHECK(base[4] == "1.00");  // the baseline against itself
  CHECK(topk[1] == "bsp-topk");
  double bytes_ratio = 1;
  REQUIRE(absl::SimpleAtod(topk[8], &bytes_ratio));
  CHECK(bytes_ratio < 0.5);  // 1% pushes, sparse pulls
  const std::string svg = ReadFileOrEmpty(dir + "/study.svg");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("stragglers / bsp-topk") != std::string::npos);
}

TEST_CASE("on MNIST the study plots test accuracy against time per configuration") {
  const char* mnist = std::getenv("LEEWAY_MNIST_DIR");
  REQUIRE(mnist != nullptr);
  REQUIRE(std::ifstream(std::string(mnist) + "/train-images-idx3-ubyte").good());
  const std::string dir = MakeTempDir("comm_study_mnist");
  std::ofstream(dir + "/study-curves.svg") << "a stale plot from an earlier run";
  // Top-k pushes and top-k pulls (leeway-server --pull_density through launch).
  RunStudy(dir, {"--workload=mnist", "--clocks=60", "--configs=bsp-topk+pulls", "--overlap=on",
                 std::string("--data_dir=") + mnist});
  const std::vector<PlotSeries> curves = PlotSeriesIn(ReadFileOrEmpty(dir + "/study-curves.svg"));
  REQUIRE(curves.size() == 2);
  CHECK(curves[0].label == "BSP, none");
  CHECK(curves[1].label == "BSP, fixed:topk:0.01, pulls top-k 0.01");
  for (const PlotSeries& c : curves) {
    INFO(c.label);
    int evaluated = 0;
    for (const HistoryPoint& p : c.points) evaluated += p.accuracy >= 0;
    CHECK(evaluated >= 2);
    REQUIRE_FALSE(c.points.empty());
    CHECK(c.points.back().seconds > c.points.front().seconds);
  }
  CHECK(ReadFileOrEmpty(dir + "/runs/equal-bsp-topk+pulls-1/server0.log").find("top-k pulls") !=
        std::string::npos);
  // The table has the accuracy columns.
  CHECK(ReadFileOrEmpty(dir + "/study.md").find("test accuracy") != std::string::npos);
}

}  // namespace
}  // namespace leeway
