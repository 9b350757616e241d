// TicketGroup: one Ticket for an operation made of several parts (a layer's
// pushes or pulls, one per chunk). The ticket completes when every part
// has reported, with the first error any part reported (OK otherwise).
// Thread-safe.
#ifndef LEEWAY_WORKER_TICKET_GROUP_H_
#define LEEWAY_WORKER_TICKET_GROUP_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "core/transport/ticket.h"

namespace leeway {

class TicketGroup {
 public:
  // `parts` == 0 completes the ticket at once, OK.
  static std::shared_ptr<TicketGroup> Create(int parts);

  const Ticket& ticket() const { return ticket_; }
  void PartDone(const absl::Status& status);

 private:
  explicit TicketGroup(int parts) : left_(parts) {}

  Ticket ticket_;
  absl::Mutex mu_;
  int left_ ABSL_GUARDED_BY(mu_);
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_TICKET_GROUP_H_
