#include "server/chunk.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/codec.h"
#include "kernels/payload.h"

namespace leeway {

Chunk::Chunk(const ChunkInfo& info, const OptimizerConfig& optimizer,
             uint32_t block_elements)
    : info_(info),
      optimizer_(optimizer),
      block_elements_(std::max<uint32_t>(1, block_elements)),
      params_(info.elements, 0.0f),
      state_(size_t(OptimizerStateSlots(optimizer.kind)) * info.elements, 0.0f),
      block_versions_((info.elements + block_elements_ - 1) / block_elements_, 0) {}

absl::StatusOr<bool> Chunk::Initialize(absl::Span<const float> values) {
  if (values.size() != info_.elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "initial values for layer ", info_.layer, " chunk ", info_.chunk,
        " hold ", values.size(), " elements, want ", info_.elements));
  }
  absl::MutexLock lock(&mu_);
  if (initialized_) return false;
  std::copy(values.begin(), values.end(), params_.begin());
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
  std::fill(block_versions_.begin(), block_versions_.end(), version);
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
  if (IsSparse(header->codec)) {
    std::vector<uint32_t> indices;
    std::vector<float> values;
    absl::Status decoded = DecodePairs(payload, n, &indices, &values);
    if (!decoded.ok()) return decoded;
    if (scale != 1.0f) {
      for (float& v : values) v *= scale;
    }
    ApplySparse(optimizer_, next, n, params_.data(), state_.data(),
                indices.data(), values.data(), indices.size());
    for (uint32_t i : indices) block_versions_[i / block_elements_] = next;
  } else if (optimizer_.kind == OptimizerKind::kSgd &&
             optimizer_.weight_decay == 0.0f) {
    // Plain SGD on a dense payload: decode straight into the parameters.
    absl::Status decoded = DecodeAccumulate(
        payload, -optimizer_.learning_rate * scale, absl::MakeSpan(params_), 1);
    if (!decoded.ok()) return decoded;
    MarkAllChanged(next);
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
    MarkAllChanged(next);
  }
  version_ = next;
  return next;
}

absl::StatusOr<PullReply> Chunk::Read(uint64_t since_version) const {
  absl::ReaderMutexLock lock(&mu_);
  if (!initialized_) {
    return absl::UnavailableError(absl::StrCat(
        "layer ", info_.layer, " chunk ", info_.chunk,
        " has no initial values yet"));
  }
  PullReply reply;
  reply.version = version_;
  if (since_version == version_) return reply;
  const size_t n = info_.elements;
  size_t changed = 0;
  const bool known = since_version < version_;
  if (known) {
    for (size_t b = 0; b < block_versions_.size(); ++b) {
      if (block_versions_[b] > since_version) {
        changed += std::min<size_t>(block_elements_, n - b * block_elements_);
      }
    }
  }
  // Bodies: a delta is 4 + 8 bytes per element, the dense chunk 4 per element.
  if (known && 4 + 8 * changed < 4 * n) {
    std::vector<uint32_t> indices;
    std::vector<float> values;
    indices.reserve(changed);
    values.reserve(changed);
    for (size_t b = 0; b < block_versions_.size(); ++b) {
      if (block_versions_[b] <= since_version) continue;
      const size_t end = std::min<size_t>(n, (b + 1) * block_elements_);
      for (size_t i = b * block_elements_; i < end; ++i) {
        indices.push_back(static_cast<uint32_t>(i));
        values.push_back(params_[i]);
      }
    }
    reply.form = PullReply::Form::kDelta;
    absl::Status encoded = EncodePairs(n, indices, values, &reply.payload);
    if (!encoded.ok()) return encoded;
    return reply;
  }
  CodecParams dense;
  dense.codec = CodecId::kNone;
  dense.threads = 1;
  reply.form = PullReply::Form::kDense;
  absl::Status encoded = Encode(params_, {}, dense, &reply.payload);
  if (!encoded.ok()) {
    return absl::InternalError(absl::StrCat(
        "layer ", info_.layer, " chunk ", info_.chunk,
        " parameters are not finite: ", encoded.message()));
  }
  return reply;
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
  initialized_ = true;
  MarkAllChanged(version_);
  return absl::OkStatus();
}

}  // namespace leeway
