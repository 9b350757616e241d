// Which queued pulls share one PULL_BATCH: the worker's pull thread offers
// them in queue order and sends those taken before the first refusal.
// A batch holds pulls of one clock, at most kMaxEntries of them, whose
// replies are expected to take at most `expected_limit` bytes (a chunk's
// last reply, or its fp32 size before its first) and could take at most
// kMaxDenseBytes (the chunks as fp32: the servers refuse a batch whose
// reply could outgrow a message). The first pull offered is always taken,
// whatever its size; with expected_limit 0 it is the only one.
#ifndef LEEWAY_WORKER_PULL_BATCH_SIZER_H_
#define LEEWAY_WORKER_PULL_BATCH_SIZER_H_

#include <cstddef>
#include <cstdint>
#include <optional>

namespace leeway {

class PullBatchSizer {
 public:
  // Entries: the first of them is not held back long by the rest.
  static constexpr size_t kMaxEntries = 32;
  // Well under the data plane's 64 MiB message limit. With top-k pulls
  // the replies expected are about 1% of it, and this bounds the batch.
  static constexpr uint64_t kMaxDenseBytes = 16 << 20;

  explicit PullBatchSizer(uint64_t expected_limit) : expected_limit_(expected_limit) {}

  // Whether a pull of `elements` fp32 values at `clock`, whose chunk's last
  // reply took `last_reply_bytes`, joins the batch; counts it if it does.
  bool Take(uint32_t clock, uint64_t elements, std::optional<uint64_t> last_reply_bytes);
  size_t entries() const { return entries_; }

 private:
  const uint64_t expected_limit_;
  size_t entries_ = 0;
  uint32_t clock_ = 0;
  uint64_t dense_bytes_ = 0;
  uint64_t expected_bytes_ = 0;
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_PULL_BATCH_SIZER_H_
