#include "worker/gradient_pass.h"

#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "kernels/codec_test_util.h"

namespace leeway {
namespace {

using testing::Gradient;

double Reference(const std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += double{x} * x;
  return sum;
}

TEST_CASE("sums of squares match a double loop") {
  for (size_t n : {size_t{0}, size_t{1}, size_t{17}, size_t{4096}, size_t{100003}}) {
    INFO("n=" << n);
    const auto g = Gradient(n, 1);
    const absl::StatusOr<double> checked = CheckedSumOfSquares(g);
    REQUIRE(checked.ok());
    CHECK(*checked == Approx(Reference(g)).epsilon(1e-5));
    CHECK(SumOfSquares(g) == Approx(Reference(g)).epsilon(1e-5));
  }
  // Squares past float's range: that block is summed in double.
  std::vector<float> huge(5000, 1e20f);
  CHECK(std::isfinite(SumOfSquares(huge)));
  CHECK(SumOfSquares(huge) == Approx(5000 * 1e40));
}

TEST_CASE("a non-finite gradient is refused, naming its index") {
  // Each of a vector step's two halves of 8 lanes, and the scalar tail
  // (20003 = 4 blocks of 4096 + 3619, whose last 3 are past the last step).
  for (size_t at : {size_t{0}, size_t{7}, size_t{8}, size_t{15}, size_t{12345}, size_t{20001}}) {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                      -std::numeric_limits<float>::infinity()}) {
      INFO("at " << at << ": " << bad);
      auto g = Gradient(20003, 4);
      g[at] = bad;
      const absl::Status status = CheckedSumOfSquares(g).status();
      CHECK(status.code() == absl::StatusCode::kInvalidArgument);
      CHECK(status.message().find(absl::StrCat(" at ", at, ":")) != std::string::npos);
    }
  }
}

}  // namespace
}  // namespace leeway
