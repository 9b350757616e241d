#include "core/common/status_macros.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

int g_calls = 0;

absl::StatusOr<int> Half(int x) {
  ++g_calls;
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::Status Check(int x) {
  LEEWAY_ASSIGN_OR_RETURN(int half, Half(x));
  LEEWAY_RETURN_IF_ERROR(half > 10 ? absl::OutOfRangeError("big")
                                   : absl::OkStatus());
  return absl::OkStatus();
}

TEST_CASE("status macros propagate the first error and evaluate once") {
  g_calls = 0;
  CHECK(Check(4).ok());
  CHECK(g_calls == 1);
  CHECK(Check(3).code() == absl::StatusCode::kInvalidArgument);
  CHECK(Check(40).code() == absl::StatusCode::kOutOfRange);
  CHECK(g_calls == 3);
}

}  // namespace
}  // namespace leeway
