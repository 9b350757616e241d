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

TEST_CASE("a network transport is found in the list, or not") {
  CHECK(TransportListHasNetwork("tcp"));
  CHECK(TransportListHasNetwork("sm,self,tcp"));
  CHECK(TransportListHasNetwork("rc_x,sm"));
  CHECK(TransportListHasNetwork("tcp:aux,sm"));
  CHECK(TransportListHasNetwork("all"));
  CHECK(TransportListHasNetwork(""));
  CHECK(TransportListHasNetwork("^sm"));
  CHECK_FALSE(TransportListHasNetwork("sm,self"));
  CHECK_FALSE(TransportListHasNetwork("sysv,posix,self"));
  CHECK_FALSE(TransportListHasNetwork("self"));
  CHECK_FALSE(TransportListHasNetwork("tcpx,shm"));
}

}  // namespace
}  // namespace leeway
