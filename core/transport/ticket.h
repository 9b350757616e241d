// Ticket: the handle of one asynchronous transport operation (a send, a
// request/response call, a connect).
//
// The transport completes every ticket exactly once: with OK, with the
// peer's error, with DEADLINE_EXCEEDED, or with UNAVAILABLE/CANCELLED when a
// peer is lost or the transport shuts down. A ticket completes only after
// UCX has stopped touching the caller's buffers, so once done() a caller may
// free what it lent. Thread-safe; copies share the same state. done() and a
// Wait() on a finished ticket take no lock; a ticket made by Succeeded()
// (an eager send UCX finished inside the call) allocates nothing.
//
// Example:
//   Ticket t = transport.Call(peer, header, request, reply_buffer, deadline);
//   LEEWAY_RETURN_IF_ERROR(t.Wait());
//   const Message& reply = t.reply();
#ifndef LEEWAY_CORE_TRANSPORT_TICKET_H_
#define LEEWAY_CORE_TRANSPORT_TICKET_H_

#include <atomic>
#include <memory>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/transport/message.h"

namespace leeway {

class Ticket {
 public:
  // A pending ticket.
  Ticket();
  // A ticket already completed with OK and no reply; it shares no state.
  static Ticket Succeeded() { return Ticket(nullptr); }

  // Completes the ticket; later calls are ignored. Transport-internal.
  void Complete(absl::Status status, Message reply = Message());

  // Blocks until the ticket completes or `deadline` passes; returns the
  // operation's status, or DEADLINE_EXCEEDED if only the wait timed out (the
  // operation then still owns the caller's buffers until done()).
  absl::Status Wait(absl::Time deadline = absl::InfiniteFuture()) const;
  bool done() const;
  // The status; meaningful once done().
  absl::Status status() const;
  // The reply of a call (empty for other operations); valid once done().
  const Message& reply() const;
  // Moves the reply out; valid once done().
  Message TakeReply();

 private:
  explicit Ticket(std::nullptr_t) {}

  struct State {
    mutable absl::Mutex mu;
    // Set once, under mu, after status and reply (release); a reader that
    // sees it set (acquire) may read status without mu: it no longer changes.
    std::atomic<bool> done{false};
    absl::Status status;  // written under mu before done
    Message reply;        // likewise; TakeReply moves it out under mu
  };
  // Null for a ticket made by Succeeded().
  std::shared_ptr<State> state_;
};

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_TICKET_H_
