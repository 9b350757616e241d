#include "worker/ticket_group.h"

#include <thread>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("a group completes when every part has reported") {
  auto group = TicketGroup::Create(3);
  group->PartDone(absl::OkStatus());
  group->PartDone(absl::OkStatus());
  CHECK_FALSE(group->ticket().done());
  group->PartDone(absl::OkStatus());
  REQUIRE(group->ticket().done());
  CHECK(group->ticket().status().ok());
}

TEST_CASE("the first error wins and extra reports are ignored") {
  auto group = TicketGroup::Create(2);
  group->PartDone(absl::UnavailableError("server 1 lost"));
  group->PartDone(absl::DataLossError("later"));
  group->PartDone(absl::OkStatus());
  REQUIRE(group->ticket().done());
  CHECK(group->ticket().status().code() == absl::StatusCode::kUnavailable);
}

TEST_CASE("an empty group is done at once") {
  CHECK(TicketGroup::Create(0)->ticket().done());
}

TEST_CASE("parts reported from many threads complete the ticket once") {
  constexpr int kParts = 64;
  auto group = TicketGroup::Create(kParts);
  std::vector<std::thread> threads;
  for (int i = 0; i < kParts; ++i) {
    threads.emplace_back([group] { group->PartDone(absl::OkStatus()); });
  }
  for (auto& t : threads) t.join();
  CHECK(group->ticket().Wait(absl::Now() + absl::Seconds(5)).ok());
}

}  // namespace
}  // namespace leeway
