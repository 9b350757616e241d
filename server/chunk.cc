#include "server/chunk.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/codec.h"
#include "kernels/gather_block.h"
#include "kernels/indexed_prefetch.h"
#include "kernels/payload.h"
#include "kernels/topk_select.h"
#include "kernels/vector_clones.h"

namespace leeway {

namespace {

// difference = params - served over n elements; returns how many of them
// are not zero.
LEEWAY_VECTOR_CLONES
uint32_t Difference(const float* __restrict params, const float* __restrict served,
                    float* __restrict difference, uint32_t n) {
  uint32_t differ = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const float d = params[i] - served[i];
    difference[i] = d;
    differ += d != 0.0f;
  }
  return differ;
}

size_t ServedElements(uint32_t elements, float density) {
  if (!(density > 0.0f && density < 1.0f) || elements < kSparsePullMinElements) return 0;
  return static_cast<size_t>(std::ceil(double{density} * elements));
}

}  // namespace

Chunk::Chunk(const ChunkInfo& info, const OptimizerConfig& optimizer,
             const ChunkOptions& options)
    : info_(info),
      optimizer_(optimizer),
      block_elements_(std::max<uint32_t>(1, options.block_elements)),
      served_elements_(ServedElements(info.elements, options.pull_density)),
      params_(info.elements, 0.0f),
      state_(size_t(OptimizerStateSlots(optimizer.kind)) * info.elements, 0.0f),
      served_(served_elements_ > 0 ? info.elements : 0, 0.0f),
      difference_(served_.size(), 0.0f),
      block_stamps_((info.elements + block_elements_ - 1) / block_elements_, 0) {}

absl::StatusOr<bool> Chunk::Initialize(absl::Span<const float> values) {
  if (values.size() != info_.elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "initial values for layer ", info_.layer, " chunk ", info_.chunk,
        " hold ", values.size(), " elements, want ", info_.elements));
  }
  absl::MutexLock lock(&mu_);
  if (initialized_) return false;
  std::copy(values.begin(), values.end(), params_.begin());
  if (sparse_pulls()) ServeAll();
  initialized_ = true;
  return true;
}

bool Chunk::initialized() const {
  absl::ReaderMutexLock lock(&mu_);
  return initialized_;
}

uint64_t Chunk::version() const {
  absl::ReaderMutexLock lock(&mu_);
  return version_;
}

void Chunk::MarkAllChanged(uint64_t version) {
  stamp_base_ = version;
  std::fill(block_stamps_.begin(), block_stamps_.end(), 0u);
}

uint32_t Chunk::StampFor(uint64_t version) {
  if (version - stamp_base_ > UINT32_MAX) MarkAllChanged(ViewVersion());
  return static_cast<uint32_t>(version - stamp_base_);
}

absl::StatusOr<uint64_t> Chunk::Apply(absl::Span<const uint8_t> payload,
                                      float scale) {
  absl::StatusOr<PayloadHeader> header = ReadPayloadHeader(payload);
  if (!header.ok()) return header.status();
  const size_t n = info_.elements;
  absl::MutexLock lock(&mu_);
  if (!initialized_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "layer ", info_.layer, " chunk ", info_.chunk, " is not initialized"));
  }
  const uint64_t next = version_ + 1;
  const bool sparse = IsSparse(header->codec);
  std::vector<uint32_t> indices;  // what a sparse payload changed
  if (sparse) {
    std::vector<float> values;
    absl::Status decoded = DecodePairs(payload, n, &indices, &values);
    if (!decoded.ok()) return decoded;
    if (scale != 1.0f) {
      for (float& v : values) v *= scale;
    }
    ApplySparse(optimizer_, next, n, params_.data(), state_.data(),
                indices.data(), values.data(), indices.size());
  } else if (optimizer_.kind == OptimizerKind::kSgd &&
             optimizer_.weight_decay == 0.0f) {
    // Plain SGD on a dense payload: decode straight into the parameters.
    absl::Status decoded = DecodeAccumulate(
        payload, -optimizer_.learning_rate * scale, absl::MakeSpan(params_), 1);
    if (!decoded.ok()) return decoded;
  } else {
    // A scratch buffer per apply thread: allocating (and faulting in) a
    // chunk-sized vector per push would cost more than the update itself.
    thread_local std::vector<float> grad;
    if (grad.size() < n) grad.resize(n);
    absl::Status decoded = Decode(payload, absl::MakeSpan(grad.data(), n), 1);
    if (!decoded.ok()) return decoded;
    if (scale != 1.0f) {
      for (size_t i = 0; i < n; ++i) grad[i] *= scale;
    }
    ApplyDense(optimizer_, next, n, params_.data(), state_.data(), grad.data());
  }
  // Stamp what pulls read: the parameters, or (with a served copy) nothing
  // until the next publication.
  if (sparse_pulls()) {
    owed_ = true;
    if (!sparse) {
      difference_stale_ = true;
    } else if (!difference_stale_) {
      for (size_t j = 0; j < indices.size(); ++j) {
        const uint32_t i = indices[j];
        PrefetchIndexed(served_.data(), 0, indices.data(), j, indices.size());
        PrefetchIndexed(difference_.data(), 0, indices.data(), j, indices.size());
        const float d = params_[i] - served_[i];
        if (difference_[i] != 0.0f) --differ_;
        if (d != 0.0f) ++differ_;
        difference_[i] = d;
      }
    }
  } else if (sparse) {
    const uint32_t stamp = StampFor(next);
    for (uint32_t i : indices) block_stamps_[i / block_elements_] = stamp;
  } else {
    MarkAllChanged(next);
  }
  version_ = next;
  return next;
}

void Chunk::ServeAll() {
  served_ = params_;
  std::fill(difference_.begin(), difference_.end(), 0.0f);
  differ_ = 0;
  difference_stale_ = false;
  owed_ = false;
}

void Chunk::Publish(uint32_t clock) {
  served_clock_ = clock;
  if (!owed_) return;
  const size_t n = info_.elements;
  if (difference_stale_) {
    differ_ = Difference(params_.data(), served_.data(), difference_.data(), n);
    difference_stale_ = false;
  }
  owed_ = differ_ > served_elements_;
  if (differ_ == 0) return;
  // The difference of two finite arrays is finite unless it overflows; a
  // refused selection publishes nothing this time.
  thread_local std::vector<uint32_t> selected;
  if (!SelectTopK(absl::MakeConstSpan(difference_), served_elements_, /*seed=*/version_,
                  /*threads=*/1, &selected, &publish_hint_).ok()) {
    return;
  }
  // A publication is a version of its own: the copy changes even when no
  // push came since the last one (what was owed).
  ++version_;
  const uint64_t previous = served_version_;
  const uint32_t stamp = StampFor(version_);
  size_t changed = 0;  // selected[0, changed): the elements that differed
  for (size_t j = 0; j < selected.size(); ++j) {
    const uint32_t i = selected[j];
    PrefetchIndexed(difference_.data(), 0, selected.data(), j, selected.size());
    PrefetchIndexed(params_.data(), 0, selected.data(), j, selected.size());
    PrefetchIndexed(served_.data(), 0, selected.data(), j, selected.size());
    if (difference_[i] == 0.0f) continue;  // fewer than k elements differ
    served_[i] = params_[i];
    difference_[i] = 0.0f;
    --differ_;
    block_stamps_[i / block_elements_] = stamp;
    selected[changed++] = i;
  }
  served_version_ = version_;
  RememberPublication(previous, absl::MakeConstSpan(selected.data(), changed));
}

void Chunk::RememberPublication(uint64_t since, absl::Span<const uint32_t> changed) {
  // Only a publication stamps the served copy's blocks, so the delta since
  // the one before is exactly the blocks of `changed` (ascending): the
  // stamps' scan in Read would find the same.
  if (since < stamp_base_) return;
  const size_t n = info_.elements;
  std::vector<uint32_t> indices;
  indices.reserve(changed.size());
  uint64_t next_block_start = 0;  // elements below it are already taken
  for (uint32_t i : changed) {
    const uint64_t start = uint64_t{i} / block_elements_ * block_elements_;
    if (start < next_block_start) continue;
    next_block_start = std::min<uint64_t>(n, start + block_elements_);
    for (uint64_t e = start; e < next_block_start; ++e) indices.push_back(uint32_t(e));
  }
  if (4 + 8 * indices.size() >= 4 * n) return;  // Read sends the dense chunk
  std::vector<float> values(indices.size());
  for (size_t j = 0; j < indices.size(); ++j) values[j] = served_[indices[j]];
  auto body = std::make_shared<std::vector<uint8_t>>();
  if (!EncodePairs(n, indices, values, body.get()).ok()) return;  // Read builds it
  RememberReply(since, served_version_, std::move(body));
}

bool Chunk::PublishFor(uint32_t clock) {
  if (!sparse_pulls()) return false;
  absl::MutexLock lock(&mu_);
  if (!initialized_ || clock <= served_clock_) return false;
  Publish(clock);
  return true;
}

size_t Chunk::NotePush(uint32_t rank, uint32_t clock) {
  absl::MutexLock lock(&mu_);
  if (clock < pushed_clock_) return 0;
  if (clock > pushed_clock_) {
    pushed_clock_ = clock;
    pushers_.clear();
  }
  if (std::find(pushers_.begin(), pushers_.end(), rank) == pushers_.end()) {
    pushers_.push_back(rank);
  }
  return pushers_.size();
}

absl::StatusOr<PullReply> Chunk::Read(uint64_t since_version, uint32_t clock) {
  PublishFor(clock);
  absl::ReaderMutexLock lock(&mu_);
  if (!initialized_) {
    return absl::UnavailableError(absl::StrCat(
        "layer ", info_.layer, " chunk ", info_.chunk,
        " has no initial values yet"));
  }
  const std::vector<float>& view = sparse_pulls() ? served_ : params_;
  PullReply reply;
  reply.version = ViewVersion();
  if (since_version == reply.version) return reply;
  const size_t n = info_.elements;
  const bool known = since_version < reply.version && since_version >= stamp_base_;
  if (known) {
    reply.body = CachedReply(since_version, reply.version);
    if (reply.body != nullptr) {
      reply.form = PullReply::Form::kDelta;
      return reply;
    }
    // The blocks changed since, in one vectorized pass over the stamps.
    const uint32_t since_stamp = static_cast<uint32_t>(since_version - stamp_base_);
    thread_local std::vector<uint32_t> blocks;
    blocks.clear();
    codec_internal::GatherKeysAbove(block_stamps_.data(), 0, block_stamps_.size(),
                                    since_stamp, &blocks);
    size_t changed = 0;
    for (uint32_t b : blocks) {
      changed += std::min<size_t>(block_elements_, n - size_t{b} * block_elements_);
    }
    // Bodies: a delta is 4 + 8 bytes per element, the dense chunk 4 per element.
    if (4 + 8 * changed < 4 * n) {
      std::vector<uint32_t> indices;
      std::vector<float> values;
      indices.reserve(changed);
      values.reserve(changed);
      for (uint32_t b : blocks) {
        const size_t end = std::min<size_t>(n, (size_t{b} + 1) * block_elements_);
        for (size_t i = size_t{b} * block_elements_; i < end; ++i) {
          indices.push_back(static_cast<uint32_t>(i));
          values.push_back(view[i]);
        }
      }
      auto body = std::make_shared<std::vector<uint8_t>>();
      absl::Status encoded = EncodePairs(n, indices, values, body.get());
      if (!encoded.ok()) return encoded;
      reply.form = PullReply::Form::kDelta;
      reply.body = std::move(body);
      RememberReply(since_version, reply.version, reply.body);
      return reply;
    }
  }
  reply.form = PullReply::Form::kDense;
  reply.body = CachedReply(kNoVersion, reply.version);
  if (reply.body != nullptr) return reply;
  CodecParams dense;
  dense.codec = CodecId::kNone;
  dense.threads = 1;
  auto body = std::make_shared<std::vector<uint8_t>>();
  absl::Status encoded = Encode(view, {}, dense, body.get());
  if (!encoded.ok()) {
    return absl::InternalError(absl::StrCat(
        "layer ", info_.layer, " chunk ", info_.chunk,
        " parameters are not finite: ", encoded.message()));
  }
  reply.body = std::move(body);
  RememberReply(kNoVersion, reply.version, reply.body);
  return reply;
}

std::shared_ptr<const std::vector<uint8_t>> Chunk::CachedReply(uint64_t since,
                                                               uint64_t version) const {
  absl::MutexLock lock(&cache_mu_);
  for (const Built& d : replies_) {
    if (d.since == since && d.version == version) return d.body;
  }
  return nullptr;
}

void Chunk::RememberReply(uint64_t since, uint64_t version,
                          std::shared_ptr<const std::vector<uint8_t>> body) const {
  // A few since-versions: BSP's pullers share one, SSP's span the bound.
  constexpr size_t kKept = 4;
  absl::MutexLock lock(&cache_mu_);
  // Replies to older versions are never asked for again.
  replies_.erase(std::remove_if(replies_.begin(), replies_.end(),
                               [&](const Built& d) { return d.version != version; }),
                replies_.end());
  if (replies_.size() >= kKept) replies_.erase(replies_.begin());
  replies_.push_back({since, version, std::move(body)});
}

ChunkState Chunk::Snapshot() const {
  absl::ReaderMutexLock lock(&mu_);
  return ChunkState{version_, params_, state_};
}

absl::Status Chunk::Restore(const ChunkState& state) {
  absl::MutexLock lock(&mu_);
  if (state.params.size() != params_.size() ||
      state.optimizer_state.size() != state_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint of layer ", info_.layer, " chunk ", info_.chunk, " holds ",
        state.params.size(), " parameters and ", state.optimizer_state.size(),
        " state values, want ", params_.size(), " and ", state_.size()));
  }
  params_ = state.params;
  state_ = state.optimizer_state;
  version_ = state.version;
  if (sparse_pulls()) {
    ServeAll();
    served_version_ = version_;
  }
  initialized_ = true;
  MarkAllChanged(version_);
  {
    // The restored state may reuse version numbers with other contents.
    absl::MutexLock cache_lock(&cache_mu_);
    replies_.clear();
  }
  return absl::OkStatus();
}

}  // namespace leeway
