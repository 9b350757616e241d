#include "core/common/thread_name.h"

#include <thread>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("a thread takes its name, cut to what Linux keeps") {
  std::string short_name, long_name;
  std::thread([&] {
    NameThisThread("lw-apply");
    short_name = ThisThreadName();
    NameThisThread("lw-a-name-longer-than-fifteen");
    long_name = ThisThreadName();
  }).join();
  CHECK(short_name == "lw-apply");
  CHECK(long_name == "lw-a-name-longe");
  CHECK(long_name.size() == kMaxThreadName);
  // Naming one thread leaves the others as they were.
  CHECK(ThisThreadName() != "lw-apply");
}

}  // namespace
}  // namespace leeway
