#include "core/transport/ucx_tls.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("CMA is left out unless named") {
  CHECK(TransportListWithoutCma("sm,self") == "sysv,posix,self");
  CHECK(TransportListWithoutCma("tcp") == "tcp");
  CHECK(TransportListWithoutCma("all") == "^cma");
  CHECK(TransportListWithoutCma("") == "^cma");
  CHECK(TransportListWithoutCma("^tcp") == "^tcp,cma");
  CHECK(TransportListWithoutCma("^cma") == "^cma");
  CHECK(TransportListWithoutCma("sm,tcp,self") == "sysv,posix,tcp,self");
  CHECK(TransportListWithoutCma("cma,sysv,self") == "cma,sysv,self");
}

}  // namespace
}  // namespace leeway
