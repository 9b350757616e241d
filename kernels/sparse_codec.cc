// CPU encoders and validation of the sparse codecs.
#include "kernels/sparse_codec.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/encode_guard.h"
#include "kernels/topk_select.h"

namespace leeway {
namespace codec_internal {
namespace {

// Prefix before the values: k, then indices or the seed.
size_t SparsePrefixBytes(CodecId codec, size_t k) {
  return 4 + (codec == CodecId::kRandomK ? 8 : 4 * k);
}

// The kept indices of v = g + r, ascending; with r, r holds v on return.
// Refuses a non-finite v (r then as it was, to float rounding).
absl::Status SelectIndices(const CodecParams& params, const float* g, float* r,
                           size_t n, std::vector<uint32_t>* indices) {
  const size_t k = SparseKeep(params.density, n);
  const int threads = params.threads;
  indices->clear();
  switch (params.codec) {
    case CodecId::kTopK:
      return SelectTopK(g, r, n, k, params.seed, threads, indices, params.topk_hint)
          .status();
    case CodecId::kThreshold: {
      absl::StatusOr<size_t> count =
          GatherAtLeast(g, r, n, params.threshold, k, threads, indices);
      if (!count.ok() || *count <= k) return count.status();
      const float* v = r != nullptr ? r : g;  // formed by the gather
      return SelectTopK(v, nullptr, n, k, params.seed, threads, indices).status();
    }
    case CodecId::kRandomK: {
      absl::Status formed = r != nullptr ? AddInto(g, r, n, threads)
                                         : CheckFinite(g, nullptr, n, threads);
      if (!formed.ok()) return formed;
      indices->resize(k);
      for (size_t j = 0; j < k; ++j) {
        (*indices)[j] = static_cast<uint32_t>(RandomKIndex(params.seed, j, n, k));
      }
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError("not a sparse codec");
  }
}

}  // namespace

uint32_t SparseParam(CodecId values, uint32_t bucket) {
  const uint32_t code = static_cast<uint32_t>(values);
  return values == CodecId::kInt8 ? code | (bucket << 8) : code;
}

size_t SparseBodyBytes(CodecId codec, CodecId values, uint32_t bucket,
                       size_t k) {
  return SparsePrefixBytes(codec, k) + DenseBodyBytes(values, k, bucket);
}

uint8_t* WriteSparsePrefix(CodecId codec, CodecId values, uint32_t bucket,
                           size_t n, absl::Span<const uint32_t> indices,
                           uint64_t seed, std::vector<uint8_t>* payload) {
  const size_t k = indices.size();
  payload->resize(kPayloadHeaderBytes + SparseBodyBytes(codec, values, bucket, k));
  WritePayloadHeader({codec, static_cast<uint32_t>(n), SparseParam(values, bucket)},
                     payload->data());
  uint8_t* body = payload->data() + kPayloadHeaderBytes;
  StoreLE32(body, static_cast<uint32_t>(k));
  if (codec == CodecId::kRandomK) {
    StoreLE64(body + 4, seed);
  } else {
    for (size_t j = 0; j < k; ++j) StoreLE32(body + 4 + 4 * j, indices[j]);
  }
  return body + SparsePrefixBytes(codec, k);
}

absl::Status EncodeSparse(const CodecParams& params, const float* g, float* r,
                          size_t n, std::vector<uint8_t>* payload) {
  std::vector<uint32_t> indices;
  absl::Status selected = g == nullptr ? SelectIndices(params, r, nullptr, n, &indices)
                                       : SelectIndices(params, g, r, n, &indices);
  if (!selected.ok()) return selected;
  const float* v = r != nullptr ? r : g;
  float* residual = r;
  const size_t k = indices.size();
  const bool randomk = params.codec == CodecId::kRandomK;
  const uint32_t bucket =
      params.values == CodecId::kInt8 ? params.int8_bucket : 0;

  std::vector<float> kept(k);
  // fp32 values go out exactly: their residual is 0, set in the same visit.
  const bool exact = params.values == CodecId::kNone && residual != nullptr;
  for (size_t j = 0; j < k; ++j) {
    const float scale = randomk && residual == nullptr
                            ? static_cast<float>(RandomKStratum(j, n, k).size)
                            : 1.0f;
    kept[j] = v[indices[j]] * scale;
    if (exact) residual[indices[j]] = 0.0f;
  }

  uint8_t* value_body = WriteSparsePrefix(params.codec, params.values, bucket,
                                          n, indices, params.seed, payload);
  // v is finite; only randomk's scaled values (no residual) can overflow.
  absl::Status encoded = EncodeDense(params.values, bucket, params.seed, k,
                                     kept.data(), nullptr, value_body, params.threads);
  if (!encoded.ok() || residual == nullptr || exact) return encoded;
  // What was sent, decoded exactly as the server will, leaves the residual.
  DecodeDenseRange(params.values, bucket, k, value_body, 0, k,
                   [&](size_t j, float sent) {
                     residual[indices[j]] -= sent;
                   });
  return absl::OkStatus();
}

absl::Status ValidateSparse(const PayloadHeader& header,
                            absl::Span<const uint8_t> payload,
                            SparseView* view) {
  const CodecId values = static_cast<CodecId>(header.param & 0xFFu);
  const uint32_t bucket = header.param >> 8;
  if (values != CodecId::kNone && values != CodecId::kFp16 &&
      values != CodecId::kBf16 && values != CodecId::kInt8) {
    return absl::InvalidArgumentError(absl::StrCat(
        CodecName(header.codec), " payload has value codec ", header.param & 0xFFu));
  }
  absl::Status param = CheckDenseParam(values, bucket);
  if (!param.ok()) return param;
  const absl::Span<const uint8_t> body = payload.subspan(kPayloadHeaderBytes);
  if (body.size() < 4) {
    return absl::InvalidArgumentError("sparse payload lacks its count");
  }
  const size_t k = LoadLE32(body.data());
  const size_t n = header.elements;
  if (k > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse payload keeps ", k, " of ", n, " elements"));
  }
  const size_t want = SparseBodyBytes(header.codec, values, bucket, k);
  if (body.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        CodecName(header.codec), " body is ", body.size(), " bytes, want ", want));
  }
  SparseView v;
  v.codec = header.codec;
  v.values = values;
  v.bucket = bucket;
  v.elements = n;
  v.k = k;
  if (header.codec == CodecId::kRandomK) {
    v.seed = LoadLE64(body.data() + 4);
  } else {
    v.indices = body.data() + 4;
    uint64_t previous = 0;
    for (size_t j = 0; j < k; ++j) {
      const uint64_t index = LoadLE32(v.indices + 4 * j);
      if (index >= n || (j > 0 && index <= previous)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sparse index ", index, " at ", j,
            index >= n ? " is out of range" : " is not ascending"));
      }
      previous = index;
    }
  }
  v.value_body = body.data() + SparsePrefixBytes(header.codec, k);
  absl::Status finite = ValidateDenseBody(values, k, bucket, v.value_body);
  if (!finite.ok()) return finite;
  *view = v;
  return absl::OkStatus();
}

}  // namespace codec_internal

size_t SparseKeep(float density, size_t n) {
  if (n == 0) return 0;
  // density is a float: 0.1f * 1000 is 100.0000015 in double, and should
  // keep 100, so products within float precision of an integer snap to it.
  double want = static_cast<double>(density) * n;
  const double nearest = std::round(want);
  if (std::fabs(want - nearest) <= want * 1e-7) want = nearest;
  return static_cast<size_t>(std::min<double>(n, std::max(1.0, std::ceil(want))));
}

}  // namespace leeway
