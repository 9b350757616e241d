// kernels_bench: codec throughput on the CPU (single-threaded unless
// --threads says otherwise), in GB/s of fp32 input, against a plain memcpy
// of the same bytes measured in the same run (the ratio is what we track;
// absolute figures drift on shared machines). Every run of a codec follows
// a memcpy run; the ratios are medians of those pairs' ratios (--repeats
// pairs), the GB/s medians of the runs.
//
//   bazel run -c opt //bench:kernels_bench -- --sizes=1048576,16777216,67108864
//
// encode: error feedback fused (residual read and written), as the worker
// runs it; and without error feedback, the codec alone.
// decode_accumulate: out += scale * decode(payload), as the server applies
// it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/timing.h"
#include "kernels/codec.h"

ABSL_FLAG(std::string, sizes, "1048576,16777216,67108864", "elements");
ABSL_FLAG(int, repeats, 5, "runs per figure; the median is reported");
ABSL_FLAG(int, threads, 1, "kernel threads (0: the whole pool)");
ABSL_FLAG(std::string, codecs, "",
          "comma-separated subset of the rows (e.g. topk1%,int8); all if empty");

namespace leeway {
namespace {

struct Row {
  std::string name;
  CodecParams params;
};

std::vector<Row> Rows() {
  std::vector<Row> rows;
  auto add = [&](std::string name, CodecId codec, float density = 1.0f,
                 CodecId values = CodecId::kNone) {
    CodecParams p;
    p.codec = codec;
    p.density = density;
    p.values = values;
    p.threads = absl::GetFlag(FLAGS_threads);
    rows.push_back({std::move(name), p});
  };
  for (CodecId c : {CodecId::kNone, CodecId::kFp16, CodecId::kBf16,
                    CodecId::kInt8, CodecId::kSign}) {
    add(CodecName(c), c);
  }
  add("topk0.1%", CodecId::kTopK, 0.001f);
  add("topk1%", CodecId::kTopK, 0.01f);
  add("topk10%", CodecId::kTopK, 0.1f);
  add("topk1%+fp16", CodecId::kTopK, 0.01f, CodecId::kFp16);
  add("topk1%+int8", CodecId::kTopK, 0.01f, CodecId::kInt8);
  add("randomk1%", CodecId::kRandomK, 0.01f);
  rows.push_back(rows[6]);  // threshold at topk1%'s level: set per size
  rows.back().name = "threshold~1%";
  rows.back().params.codec = CodecId::kThreshold;
  const std::string only = absl::GetFlag(FLAGS_codecs);
  if (only.empty()) return rows;
  std::vector<Row> chosen;
  for (absl::string_view want : absl::StrSplit(only, ',')) {
    for (const Row& row : rows) {
      if (row.name == want) chosen.push_back(row);
    }
  }
  return chosen;
}

int Run() {
  const int repeats = absl::GetFlag(FLAGS_repeats);
  std::printf("| elements | codec | encode GB/s | encode / memcpy | "
              "encode without EF / memcpy | "
              "decode_accumulate GB/s | decode_accumulate / memcpy | "
              "memcpy GB/s | payload / fp32 |\n"
              "|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',')) {
    size_t n = 0;
    if (!absl::SimpleAtoi(text, &n) || n == 0) {
      std::fprintf(stderr, "bad size %s\n", std::string(text).c_str());
      return 1;
    }
    std::vector<float> g(n), residual(n, 0.0f), out(n, 0.0f), copy(n);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.01f);
    for (auto& x : g) x = normal(rng);
    const double bytes = 4.0 * n;
    auto copy_once = [&] { std::memcpy(copy.data(), g.data(), n * sizeof(float)); };
    copy_once();  // the destination's pages, faulted in once
    for (Row row : Rows()) {
      CodecParams& params = row.params;
      if (params.codec == CodecId::kThreshold) {
        // The magnitude that 1% of this gradient exceeds (|N(0, 0.01)|).
        params.threshold = 0.0258f;
      }
      std::fill(residual.begin(), residual.end(), 0.0f);
      std::vector<uint8_t> payload(CompressedSize(params, n));
      bool ok = true;
      const PairedTimes encode = MedianPaired(repeats, copy_once, [&] {
        ok &= Encode(g, absl::MakeSpan(residual), params, &payload).ok();
      });
      // Without error feedback (no residual): the codec's own cost.
      std::vector<uint8_t> plain;
      const PairedTimes without_ef = MedianPaired(repeats, copy_once, [&] {
        ok &= Encode(g, {}, params, &plain).ok();
      });
      const PairedTimes decode = MedianPaired(repeats, copy_once, [&] {
        ok &= DecodeAccumulate(payload, -0.1f, absl::MakeSpan(out),
                                params.threads).ok();
      });
      if (!ok) {
        std::fprintf(stderr, "codec %s failed\n", row.name.c_str());
        return 1;
      }
      std::printf("| %zu | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.3f |\n", n,
                  row.name.c_str(), bytes / encode.seconds / 1e9, encode.ratio,
                  without_ef.ratio, bytes / decode.seconds / 1e9, decode.ratio,
                  bytes / encode.baseline_seconds / 1e9, payload.size() / bytes);
    }
  }
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return leeway::Run();
}
