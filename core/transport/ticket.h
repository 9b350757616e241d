// Ticket: the handle of one asynchronous transport operation (a send, a
// request/response call, a connect).
//
// The transport completes every ticket exactly once: with OK, with the
// peer's error, with DEADLINE_EXCEEDED, or with UNAVAILABLE/CANCELLED when a
// peer is lost or the transport shuts down. A ticket completes only after
// UCX has stopped touching the caller's buffers, so once done() a caller may
// free what it lent. Thread-safe; copies share the same state.
//
// Example:
//   Ticket t = transport.Call(peer, header, request, reply_buffer, deadline);
//   LEEWAY_RETURN_IF_ERROR(t.Wait());
//   const Message& reply = t.reply();
#ifndef LEEWAY_CORE_TRANSPORT_TICKET_H_
#define LEEWAY_CORE_TRANSPORT_TICKET_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/transport/message.h"

namespace leeway {

class Ticket {
 public:
  Ticket();

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
  struct State {
    mutable absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::Status status ABSL_GUARDED_BY(mu);
    Message reply ABSL_GUARDED_BY(mu);
  };
  std::shared_ptr<State> state_;
};

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_TICKET_H_
