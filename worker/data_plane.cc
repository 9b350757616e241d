#include "worker/data_plane.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/common/file_text.h"
#include "core/common/logging.h"

namespace leeway {

absl::StatusOr<std::unique_ptr<DataPlane>> DataPlane::Create(const TransportOptions& options,
                                                             const std::string& ready_file) {
  std::unique_ptr<DataPlane> plane(new DataPlane(options, ready_file));
  absl::MutexLock lock(&plane->mu_);
  absl::Status added = plane->AddTransport();
  if (!added.ok()) return added;
  return plane;
}

absl::Status DataPlane::AddTransport() {
  absl::StatusOr<std::unique_ptr<Transport>> created = Transport::Create(options_);
  if (!created.ok()) return created.status();
  if (!ready_file_.empty()) {
    absl::StatusOr<std::string> address = (*created)->WorkerAddress();
    if (!address.ok()) return address.status();
    absl::Status written = WriteFileAtomically(
        ready_file_, absl::StrCat("0\n", absl::BytesToHexString(*address), "\n"));
    if (!written.ok()) return written;
  }
  transports_.push_back(*std::move(created));
  return absl::OkStatus();
}

absl::StatusOr<Transport*> DataPlane::Healthy() {
  absl::MutexLock lock(&mu_);
  if (transports_.back()->stats().stalls == 0) return transports_.back().get();
  absl::Status added = AddTransport();
  if (!added.ok()) {
    return absl::Status(added.code(),
                        absl::StrCat("cannot replace the stalled data plane: ", added.message()));
  }
  LEEWAY_LOG(WARNING) << "replaced the data plane: its shared-memory FIFO stalled (a peer died "
                         "inside a send into it); reconnecting the servers through a new one ("
                      << transports_.size() - 1 << " replaced so far)";
  return transports_.back().get();
}

TransportStats DataPlane::stats() const {
  absl::MutexLock lock(&mu_);
  TransportStats sum;
  for (const auto& t : transports_) sum += t->stats();
  return sum;
}

int DataPlane::replacements() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(transports_.size()) - 1;
}

}  // namespace leeway
