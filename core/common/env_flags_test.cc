#include "core/common/env_flags.h"

#include <algorithm>
#include <cstdlib>

#include "absl/flags/flag.h"
#include "catch2/catch.hpp"

ABSL_FLAG(int, env_test_threads, 1, "for the test");
ABSL_FLAG(std::string, env_test_listen, "", "for the test");

namespace leeway {
namespace {

TEST_CASE("a flag's variable is LEEWAY_ and its name in capitals") {
  CHECK(EnvironmentVariableFor("heartbeat_interval_ms") == "LEEWAY_HEARTBEAT_INTERVAL_MS");
}

TEST_CASE("the program's flags are ours, not Abseil's") {
  const std::vector<std::string> names = ProgramFlagNames();
  auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  CHECK(has("env_test_threads"));
  CHECK(has("env_test_listen"));
  CHECK_FALSE(has("flagfile"));
  CHECK_FALSE(has("helpfull"));
  CHECK(std::is_sorted(names.begin(), names.end()));
  const std::vector<std::string> without = ProgramFlagNames("core/common/env_flags_test.cc");
  CHECK(std::find(without.begin(), without.end(), "env_test_threads") == without.end());
}

TEST_CASE("flags take their values from the environment") {
  setenv("LEEWAY_ENV_TEST_THREADS", "7", 1);
  setenv("LEEWAY_ENV_TEST_LISTEN", "", 1);  // empty: left alone
  REQUIRE(LoadFlagsFromEnvironment({"env_test_threads", "env_test_listen"}).ok());
  CHECK(absl::GetFlag(FLAGS_env_test_threads) == 7);
  CHECK(absl::GetFlag(FLAGS_env_test_listen).empty());
  setenv("LEEWAY_ENV_TEST_LISTEN", "0.0.0.0:5000", 1);
  REQUIRE(LoadFlagsFromEnvironment(ProgramFlagNames()).ok());
  CHECK(absl::GetFlag(FLAGS_env_test_listen) == "0.0.0.0:5000");

  setenv("LEEWAY_ENV_TEST_THREADS", "many", 1);
  const absl::Status bad = LoadFlagsFromEnvironment({"env_test_threads"});
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.message().find("LEEWAY_ENV_TEST_THREADS") != absl::string_view::npos);
  CHECK(absl::GetFlag(FLAGS_env_test_threads) == 7);
  unsetenv("LEEWAY_ENV_TEST_THREADS");
  unsetenv("LEEWAY_ENV_TEST_LISTEN");
}

}  // namespace
}  // namespace leeway
