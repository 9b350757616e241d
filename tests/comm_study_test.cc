// The communication study's driver on loopback with tiny sizes (the real
// study runs in bench/netlab's namespaces, which need root): it runs the
// baseline and a compressed configuration through `leeway launch`, and
// writes a table of ratios to the baseline and a bar chart.
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "core/common/file_text.h"
#include "tests/subprocess.h"

namespace leeway {
namespace {

using testing::LoopbackUcxEnvironment;
using testing::MakeTempDir;
using testing::RunfilePath;
using testing::Subprocess;

TEST_CASE("the study driver compares a configuration with BSP uncompressed") {
  const std::string dir = MakeTempDir("comm_study");
  // bin_dir: the runfiles tree holds cli/leeway, worker/leeway-worker, ...
  std::string bin = RunfilePath("cli/leeway");
  bin = bin.substr(0, bin.size() - std::string("/cli/leeway").size());
  auto study = Subprocess::Start(
      {RunfilePath("bench/comm_study"), "--workload=resnet50", "--clocks=2", "--gpu_ms=10",
       "--configs=bsp-topk", "--speeds=stragglers", "--overlap=on", "--bin_dir=" + bin,
       "--work_dir=" + dir + "/runs", "--out=" + dir + "/study"},
      LoopbackUcxEnvironment(), dir + "/study.log");
  REQUIRE(study.ok());
  absl::StatusOr<int> code = (*study)->Wait(absl::Now() + absl::Minutes(5));
  INFO((*study)->Output());
  REQUIRE(code.ok());
  REQUIRE(*code == 0);
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

}  // namespace
}  // namespace leeway
