#include "core/common/env_flags.h"

#include <cstdlib>

#include "absl/flags/flag.h"
#include "catch2/catch.hpp"

ABSL_FLAG(int, env_test_threads, 1, "for the test");
ABSL_FLAG(std::string, env_test_listen, "", "for the test");

namespace leeway {
namespace {

TEST_CASE("flags take their values from the environment") {
  setenv("LEEWAY_TEST_THREADS", "7", 1);
  setenv("LEEWAY_TEST_LISTEN", "0.0.0.0:5000", 1);
  setenv("LEEWAY_TEST_EMPTY", "", 1);
  REQUIRE(LoadFlagsFromEnvironment({{"env_test_threads", "LEEWAY_TEST_THREADS"},
                                    {"env_test_listen", "LEEWAY_TEST_LISTEN"},
                                    {"env_test_threads", "LEEWAY_TEST_EMPTY"}})
              .ok());
  CHECK(absl::GetFlag(FLAGS_env_test_threads) == 7);
  CHECK(absl::GetFlag(FLAGS_env_test_listen) == "0.0.0.0:5000");
  setenv("LEEWAY_TEST_THREADS", "many", 1);
  const absl::Status bad =
      LoadFlagsFromEnvironment({{"env_test_threads", "LEEWAY_TEST_THREADS"}});
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.message().find("LEEWAY_TEST_THREADS") != absl::string_view::npos);
  CHECK(absl::GetFlag(FLAGS_env_test_threads) == 7);
}

}  // namespace
}  // namespace leeway
