#include "worker/progress.h"

#include <string>

#include "catch2/catch.hpp"
#include "cli/launch_report.h"

namespace leeway {
namespace {

IterationStats Iteration(double ms, double wait_ms, uint64_t bytes, double push_wait_ms = 0) {
  IterationStats it;
  it.iteration_ms = ms;
  it.pull_wait_ms = wait_ms;
  it.push_wait_ms = push_wait_ms;
  it.bytes_sent = bytes;
  it.messages = bytes / 100;
  it.dense_bytes = 4 * bytes;
  it.push_bytes = bytes;
  return it;
}

TEST_CASE("warm-up clocks count as clocks but not in the figures") {
  Progress progress(/*rank=*/1, /*clocks=*/4, /*log_every=*/10, /*history_path=*/"",
                    /*warmup=*/2);
  // A slow, heavy first clock (the dense first pull), then steady ones.
  progress.Iteration(Iteration(1000, 900, 1000000), 0, 10);
  progress.Iteration(Iteration(500, 400, 500000), 0, 10);
  progress.Iteration(Iteration(100, 20, 1000), 0, 10);
  progress.Iteration(Iteration(100, 30, 3000), 0, 10);
  auto result = ParseWorkerResult(progress.Result(-1, 0));
  REQUIRE(result.ok());
  CHECK(result->clocks == 4);
  CHECK(result->samples_per_sec == Approx(100.0));  // 20 samples in 0.2 s
  CHECK(result->comm_share == Approx(0.25));        // 50 of 200 ms
  CHECK(result->bytes_per_iter == Approx(2000.0));
  CHECK(result->messages_per_iter == Approx(20.0));
  CHECK(result->compression_ratio == Approx(4.0));
  CHECK(progress.Result(-1, 0).find("\"measured_clocks\": 2") != std::string::npos);
}

TEST_CASE("without warm-up every clock is measured") {
  Progress progress(0, 2, 10, "");
  progress.Iteration(Iteration(300, 100, 10), 0, 3);
  progress.Iteration(Iteration(100, 100, 30), 0, 1);
  auto result = ParseWorkerResult(progress.Result(-1, 0));
  REQUIRE(result.ok());
  CHECK(result->samples_per_sec == Approx(10.0));
  CHECK(result->comm_share == Approx(0.5));
  CHECK(result->bytes_per_iter == Approx(20.0));
}

TEST_CASE("the communication share splits into waiting for pulls and for pushes") {
  Progress progress(0, 2, 10, "");
  progress.Iteration(Iteration(200, 30, 10, /*push_wait_ms=*/50), 0, 1);
  progress.Iteration(Iteration(200, 10, 10, /*push_wait_ms=*/10), 0, 1);
  auto result = ParseWorkerResult(progress.Result(-1, 0));
  REQUIRE(result.ok());
  CHECK(result->comm_share == Approx(0.25));       // 100 of 400 ms
  CHECK(result->pull_wait_share == Approx(0.10));  // 40 of them on pulls
}

}  // namespace
}  // namespace leeway
