#include "coordinator/membership.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000000);

Registration Worker(std::optional<uint32_t> rank = std::nullopt) {
  Registration r;
  r.role = MemberRole::kWorker;
  r.host = "w";
  r.requested_rank = rank;
  return r;
}

TEST_CASE("ranks are assigned per role, lowest free first") {
  Membership m(absl::Seconds(5));
  CHECK(m.Register(Worker(), kStart)->rank == 0);
  CHECK(m.Register(Worker(), kStart)->rank == 1);
  Registration server;
  server.role = MemberRole::kServer;
  CHECK(m.Register(server, kStart)->rank == 0);
  CHECK(m.Register(Worker(7), kStart)->rank == 7);
  CHECK(m.Register(Worker(1), kStart).status().code() == absl::StatusCode::kAlreadyExists);
  CHECK(m.Register(Worker(), kStart)->rank == 2);
  CHECK(m.LiveCount(MemberRole::kWorker) == 4);
}

TEST_CASE("a silent worker is declared dead within timeout plus one sweep") {
  const absl::Duration timeout = absl::Seconds(5), interval = absl::Seconds(1);
  Membership m(timeout);
  auto a = m.Register(Worker(), kStart);
  auto b = m.Register(Worker(), kStart);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  // Worker a heartbeats every interval; b stops after its first one.
  REQUIRE(m.Heartbeat(MemberRole::kWorker, b->rank, b->incarnation, 3, kStart).ok());
  absl::Time declared = absl::InfiniteFuture();
  for (absl::Time now = kStart; now < kStart + absl::Seconds(20); now += interval) {
    REQUIRE(m.Heartbeat(MemberRole::kWorker, a->rank, a->incarnation, 1, now).ok());
    for (const MemberInfo& gone : m.Sweep(now)) {
      CHECK(gone.rank == b->rank);
      CHECK(gone.health == MemberHealth::kDead);
      declared = std::min(declared, now);
    }
  }
  CHECK(declared > kStart + timeout);
  CHECK(declared <= kStart + timeout + interval);
  CHECK(m.Ranks(MemberRole::kWorker, MemberHealth::kDead) == std::vector<uint32_t>{1});
  // A dead member's heartbeats are refused until it registers again.
  CHECK(m.Heartbeat(MemberRole::kWorker, b->rank, b->incarnation, 4, declared).code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("a member that comes back gets a new incarnation") {
  Membership m(absl::Seconds(1));
  Registration server;
  server.role = MemberRole::kServer;
  auto first = m.Register(server, kStart);
  REQUIRE(first.ok());
  REQUIRE(m.Sweep(kStart + absl::Seconds(2)).size() == 1);
  CHECK(m.Ranks(MemberRole::kServer, MemberHealth::kDown) == std::vector<uint32_t>{0});
  server.requested_rank = 0;  // restored from its checkpoint
  auto again = m.Register(server, kStart + absl::Seconds(3));
  REQUIRE(again.ok());
  CHECK(again->incarnation == first->incarnation + 1);
  CHECK(m.Heartbeat(MemberRole::kServer, 0, first->incarnation, 0, kStart).code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(m.Heartbeat(MemberRole::kServer, 0, again->incarnation, 0,
                    kStart + absl::Seconds(3)).ok());
  CHECK(m.Heartbeat(MemberRole::kServer, 9, 1, 0, kStart).code() ==
        absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace leeway
