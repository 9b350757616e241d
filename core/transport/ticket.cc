#include "core/transport/ticket.h"

#include <utility>

namespace leeway {

Ticket::Ticket() : state_(std::make_shared<State>()) {}

void Ticket::Complete(absl::Status status, Message reply) {
  absl::MutexLock lock(&state_->mu);
  if (state_->done) return;
  state_->status = std::move(status);
  state_->reply = std::move(reply);
  state_->done = true;
}

absl::Status Ticket::Wait(absl::Time deadline) const {
  absl::MutexLock lock(&state_->mu);
  const bool finished = state_->mu.AwaitWithDeadline(
      absl::Condition(&state_->done), deadline);
  if (!finished) {
    return absl::DeadlineExceededError("timed out waiting for the operation");
  }
  return state_->status;
}

bool Ticket::done() const {
  absl::MutexLock lock(&state_->mu);
  return state_->done;
}

absl::Status Ticket::status() const {
  absl::MutexLock lock(&state_->mu);
  return state_->status;
}

const Message& Ticket::reply() const {
  absl::MutexLock lock(&state_->mu);
  return state_->reply;
}

Message Ticket::TakeReply() {
  absl::MutexLock lock(&state_->mu);
  return std::move(state_->reply);
}

}  // namespace leeway
