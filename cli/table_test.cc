#include "cli/table.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("tables align like etcdctl's") {
  Table t({"ROLE", "RANK", "HOST"});
  t.Add({"worker", "0", "a"});
  t.Add({"server", "12", "long-host"});
  CHECK(t.Render() ==
        "+--------+------+-----------+\n"
        "| ROLE   | RANK | HOST      |\n"
        "+--------+------+-----------+\n"
        "| worker |    0 | a         |\n"
        "| server |   12 | long-host |\n"
        "+--------+------+-----------+\n");
}

TEST_CASE("an empty table still has its header") {
  Table t({"A"});
  CHECK(t.Render() == "+---+\n| A |\n+---+\n+---+\n");
}

}  // namespace
}  // namespace leeway
