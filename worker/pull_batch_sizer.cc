#include "worker/pull_batch_sizer.h"

namespace leeway {

bool PullBatchSizer::Take(uint32_t clock, uint64_t elements,
                          std::optional<uint64_t> last_reply_bytes) {
  const uint64_t dense = elements * 4;
  const uint64_t expected = last_reply_bytes.value_or(dense);
  if (entries_ > 0 &&
      (expected_limit_ == 0 || entries_ >= kMaxEntries || clock != clock_ ||
       expected_bytes_ + expected > expected_limit_ || dense_bytes_ + dense > kMaxDenseBytes)) {
    return false;
  }
  if (entries_ == 0) clock_ = clock;
  ++entries_;
  dense_bytes_ += dense;
  expected_bytes_ += expected;
  return true;
}

}  // namespace leeway
