// The codec API: parameter checks, dispatch to the dense and sparse codecs,
// and the decode entry points.
#include "kernels/codec.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/dense_codec.h"
#include "kernels/half.h"
#include "kernels/parallel_for.h"
#include "kernels/parsed_payload.h"
#include "kernels/payload.h"
#include "kernels/sparse_codec.h"

namespace leeway {
namespace {

using codec_internal::DecodeDenseRange;
using codec_internal::DecodeSparseRange;
using codec_internal::DenseGrain;
using codec_internal::IsDense;
using codec_internal::kDenseGrain;
using codec_internal::ParsedPayload;
using codec_internal::SparseView;
using Parsed = ParsedPayload;

// Calls emit(index, value) for every element a parsed payload carries,
// blocks in parallel (distinct blocks never share an index).
template <typename Emit>
void ForEachDecoded(const Parsed& p, int threads, Emit emit) {
  const PayloadHeader& h = p.header;
  if (IsSparse(h.codec)) {
    ParallelFor(p.sparse.k, kDenseGrain, threads, [&](size_t begin, size_t end) {
      DecodeSparseRange(p.sparse, begin, end, emit);
    });
    return;
  }
  ParallelFor(h.elements, DenseGrain(h.codec, h.param), threads,
              [&](size_t begin, size_t end) {
                DecodeDenseRange(h.codec, h.param, h.elements, p.body, begin,
                                 end, emit);
              });
}

}  // namespace

namespace codec_internal {

absl::Status ParsePayload(absl::Span<const uint8_t> payload, size_t elements,
                          ParsedPayload* parsed) {
  absl::StatusOr<PayloadHeader> h = ReadPayloadHeader(payload);
  if (!h.ok()) return h.status();
  if (h->elements != elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "payload holds ", h->elements, " elements, expected ", elements));
  }
  parsed->header = *h;
  parsed->body = payload.data() + kPayloadHeaderBytes;
  if (IsSparse(h->codec)) {
    return ValidateSparse(*h, payload, &parsed->sparse);
  }
  absl::Status param = CheckDenseParam(h->codec, h->param);
  if (!param.ok()) return param;
  const size_t want = kPayloadHeaderBytes + DenseBodyBytes(h->codec, elements, h->param);
  if (payload.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        CodecName(h->codec), " payload is ", payload.size(), " bytes, want ",
        want));
  }
  return ValidateDenseBody(h->codec, elements, h->param, parsed->body);
}

}  // namespace codec_internal

absl::Status ValidatePayload(absl::Span<const uint8_t> payload, size_t elements) {
  ParsedPayload parsed;
  return codec_internal::ParsePayload(payload, elements, &parsed);
}

const char* CodecName(CodecId codec) {
  switch (codec) {
    case CodecId::kNone: return "none";
    case CodecId::kFp16: return "fp16";
    case CodecId::kBf16: return "bf16";
    case CodecId::kInt8: return "int8";
    case CodecId::kSign: return "sign";
    case CodecId::kTopK: return "topk";
    case CodecId::kRandomK: return "randomk";
    case CodecId::kThreshold: return "threshold";
  }
  return "unknown";
}

bool IsSparse(CodecId codec) { return codec_internal::IsSparseCodec(codec); }

absl::Status ValidateParams(const CodecParams& params) {
  if (static_cast<uint8_t>(params.codec) > kMaxCodecId) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown codec ", static_cast<int>(params.codec)));
  }
  const bool int8 = params.codec == CodecId::kInt8 ||
                    (IsSparse(params.codec) && params.values == CodecId::kInt8);
  if (int8) {
    absl::Status bucket = codec_internal::CheckDenseParam(CodecId::kInt8, params.int8_bucket);
    if (!bucket.ok()) return bucket;
  }
  if (params.codec == CodecId::kSign) {
    return codec_internal::CheckDenseParam(CodecId::kSign, params.sign_bucket);
  }
  if (!IsSparse(params.codec)) return absl::OkStatus();
  if (!(params.density > 0.0f && params.density <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("density ", params.density, " is not in (0, 1]"));
  }
  if (!(params.threshold >= 0.0f && std::isfinite(params.threshold))) {
    return absl::InvalidArgumentError(
        absl::StrCat("threshold ", params.threshold, " is not finite and >= 0"));
  }
  if (params.values != CodecId::kNone && params.values != CodecId::kFp16 &&
      params.values != CodecId::kBf16 && params.values != CodecId::kInt8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse values cannot be ", CodecName(params.values)));
  }
  return absl::OkStatus();
}

size_t CompressedSize(const CodecParams& params, size_t elements) {
  if (IsSparse(params.codec)) {
    const uint32_t bucket =
        params.values == CodecId::kInt8 ? params.int8_bucket : 0;
    return kPayloadHeaderBytes +
           codec_internal::SparseBodyBytes(
               params.codec, params.values, bucket,
               SparseKeep(params.density, elements));
  }
  return kPayloadHeaderBytes +
         codec_internal::DenseBodyBytes(params.codec, elements,
                                        codec_internal::DenseParam(params));
}

absl::Status Encode(absl::Span<const float> gradient, absl::Span<float> residual,
                    const CodecParams& params, std::vector<uint8_t>* payload) {
  const size_t n = gradient.size();
  if (n > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError("gradient too large for one payload");
  }
  if (!residual.empty() && residual.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "residual has ", residual.size(), " elements, gradient ", n));
  }
  if (!residual.empty() && residual.data() == gradient.data()) {
    return absl::InvalidArgumentError("residual and gradient share memory");
  }
  absl::Status status = ValidateParams(params);
  if (!status.ok()) return status;
  const float* g = gradient.data();
  float* r = residual.empty() ? nullptr : residual.data();
  if (IsSparse(params.codec)) {
    status = codec_internal::EncodeSparse(params, g, r, n, payload);
  } else {
    const uint32_t param = codec_internal::DenseParam(params);
    payload->resize(CompressedSize(params, n));
    WritePayloadHeader({params.codec, static_cast<uint32_t>(n), param},
                       payload->data());
    status = codec_internal::EncodeDense(params.codec, param, params.seed, n, g, r,
                                         payload->data() + kPayloadHeaderBytes,
                                         params.threads);
  }
  if (!status.ok()) payload->clear();
  return status;
}

absl::Status EncodeFormed(absl::Span<float> v, const CodecParams& params,
                          std::vector<uint8_t>* payload) {
  absl::Status status = ValidateParams(params);
  if (status.ok() && v.size() > std::numeric_limits<uint32_t>::max()) {
    status = absl::InvalidArgumentError("tensor too large for one payload");
  }
  if (status.ok() && !IsSparse(params.codec)) {
    status = absl::InvalidArgumentError(
        absl::StrCat(CodecName(params.codec), " is not a sparse codec"));
  }
  if (status.ok()) {
    status = codec_internal::EncodeSparse(params, nullptr, v.data(), v.size(), payload);
  }
  if (!status.ok()) payload->clear();
  return status;
}

absl::Status Decode(absl::Span<const uint8_t> payload, absl::Span<float> out,
                    int threads) {
  Parsed p;
  absl::Status valid = codec_internal::ParsePayload(payload, out.size(), &p);
  if (!valid.ok()) return valid;
  float* dst = out.data();
  if (IsSparse(p.header.codec)) {
    ParallelFor(out.size(), kDenseGrain, threads, [&](size_t begin, size_t end) {
      std::memset(dst + begin, 0, (end - begin) * sizeof(float));
    });
  }
  ForEachDecoded(p, threads, [dst](size_t i, float v) { dst[i] = v; });
  return absl::OkStatus();
}

absl::Status DecodeAccumulate(absl::Span<const uint8_t> payload, float scale,
                              absl::Span<float> out, int threads) {
  Parsed p;
  absl::Status valid = codec_internal::ParsePayload(payload, out.size(), &p);
  if (!valid.ok()) return valid;
  float* dst = out.data();
  ForEachDecoded(p, threads,
                 [dst, scale](size_t i, float v) { dst[i] += scale * v; });
  return absl::OkStatus();
}

absl::Status DecodePairs(absl::Span<const uint8_t> payload, size_t elements,
                         std::vector<uint32_t>* indices,
                         std::vector<float>* values) {
  Parsed p;
  absl::Status valid = codec_internal::ParsePayload(payload, elements, &p);
  if (!valid.ok()) return valid;
  const size_t count = IsSparse(p.header.codec) ? p.sparse.k : elements;
  indices->resize(count);
  values->resize(count);
  uint32_t* idx = indices->data();
  float* val = values->data();
  if (IsSparse(p.header.codec)) {
    DecodeSparseRange(p.sparse, 0, count, [&, j = size_t{0}](size_t i, float v) mutable {
      idx[j] = static_cast<uint32_t>(i);
      val[j++] = v;
    });
  } else {
    ForEachDecoded(p, 0, [idx, val](size_t i, float v) {
      idx[i] = static_cast<uint32_t>(i);
      val[i] = v;
    });
  }
  return absl::OkStatus();
}

absl::Status EncodePairs(size_t elements, absl::Span<const uint32_t> indices,
                         absl::Span<const float> values,
                         std::vector<uint8_t>* payload) {
  if (indices.size() != values.size() || indices.size() > elements ||
      elements > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        indices.size(), " indices, ", values.size(), " values, ", elements,
        " elements"));
  }
  for (size_t j = 0; j < indices.size(); ++j) {
    if (indices[j] >= elements || (j > 0 && indices[j] <= indices[j - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("index ", indices[j], " at ", j,
                       " is out of range or not ascending"));
    }
  }
  uint8_t* body = codec_internal::WriteSparsePrefix(
      CodecId::kTopK, CodecId::kNone, 0, elements, indices, 0, payload);
  for (size_t j = 0; j < values.size(); ++j) {
    StoreLE32(body + 4 * j, FloatBits(values[j]));
  }
  return absl::OkStatus();
}

}  // namespace leeway
