#include "worker/ticket_group.h"

namespace leeway {

std::shared_ptr<TicketGroup> TicketGroup::Create(int parts) {
  std::shared_ptr<TicketGroup> group(new TicketGroup(parts));
  if (parts <= 0) group->ticket_.Complete(absl::OkStatus());
  return group;
}

void TicketGroup::PartDone(const absl::Status& status) {
  absl::Status result;
  {
    absl::MutexLock lock(&mu_);
    if (!status.ok() && first_error_.ok()) first_error_ = status;
    if (left_ <= 0 || --left_ > 0) return;
    result = first_error_;
  }
  ticket_.Complete(result);
}

}  // namespace leeway
