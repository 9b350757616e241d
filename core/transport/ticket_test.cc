#include "core/transport/ticket.h"

#include <thread>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("a succeeded ticket is done, OK and empty, and stays so") {
  Ticket t = Ticket::Succeeded();
  CHECK(t.done());
  CHECK(t.Wait(absl::InfinitePast()).ok());
  CHECK(t.status().ok());
  CHECK(t.reply().payload.empty());
  t.Complete(absl::InternalError("late"));
  CHECK(t.status().ok());
  CHECK(t.TakeReply().owned.empty());
}

TEST_CASE("a pending ticket waits, times out, then takes the first result") {
  Ticket t;
  CHECK_FALSE(t.done());
  CHECK(t.Wait(absl::Now() + absl::Milliseconds(20)).code() ==
        absl::StatusCode::kDeadlineExceeded);
  Ticket copy = t;  // copies share the state
  std::thread completer([copy]() mutable {
    absl::SleepFor(absl::Milliseconds(20));
    Message reply;
    reply.owned = {1, 2, 3};
    copy.Complete(absl::NotFoundError("no such layer"), std::move(reply));
    copy.Complete(absl::OkStatus());  // ignored
  });
  CHECK(t.Wait(absl::Now() + absl::Seconds(10)).code() ==
        absl::StatusCode::kNotFound);
  completer.join();
  CHECK(t.done());
  CHECK(t.status().code() == absl::StatusCode::kNotFound);
  CHECK(t.reply().owned.size() == 3);
  CHECK(t.TakeReply().owned.size() == 3);
}

}  // namespace
}  // namespace leeway
