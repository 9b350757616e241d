#include "core/transport/ticket.h"

#include <utility>

namespace leeway {
namespace {

const Message& EmptyMessage() {
  static const Message* const empty = new Message();
  return *empty;
}

}  // namespace

Ticket::Ticket() : state_(std::make_shared<State>()) {}

void Ticket::Complete(absl::Status status, Message reply) {
  if (state_ == nullptr) return;
  absl::MutexLock lock(&state_->mu);
  if (state_->done.load(std::memory_order_relaxed)) return;
  state_->status = std::move(status);
  state_->reply = std::move(reply);
  state_->done.store(true, std::memory_order_release);
}

absl::Status Ticket::Wait(absl::Time deadline) const {
  if (state_ == nullptr) return absl::OkStatus();
  if (!state_->done.load(std::memory_order_acquire)) {
    absl::MutexLock lock(&state_->mu);
    const std::atomic<bool>& done = state_->done;
    const bool finished = state_->mu.AwaitWithDeadline(
        absl::Condition(
            +[](const std::atomic<bool>* d) {
              return d->load(std::memory_order_relaxed);
            },
            &done),
        deadline);
    if (!finished) {
      return absl::DeadlineExceededError("timed out waiting for the operation");
    }
  }
  // Status and reply are written once, before done; they no longer change.
  return state_->status;
}

bool Ticket::done() const {
  return state_ == nullptr || state_->done.load(std::memory_order_acquire);
}

absl::Status Ticket::status() const {
  if (state_ == nullptr) return absl::OkStatus();
  absl::MutexLock lock(&state_->mu);
  return state_->status;
}

const Message& Ticket::reply() const {
  if (state_ == nullptr) return EmptyMessage();
  absl::MutexLock lock(&state_->mu);
  return state_->reply;
}

Message Ticket::TakeReply() {
  if (state_ == nullptr) return Message();
  absl::MutexLock lock(&state_->mu);
  return std::move(state_->reply);
}

}  // namespace leeway
