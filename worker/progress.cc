#include "worker/progress.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace leeway {

Progress::Progress(uint32_t rank, int clocks, int log_every, const std::string& history_path,
                   int warmup)
    : rank_(rank),
      clocks_(clocks),
      log_every_(std::max(1, log_every)),
      warmup_(std::max(0, warmup)),
      start_(absl::Now()) {
  if (!history_path.empty()) history_.open(history_path, std::ios::app);
}

void Progress::Iteration(const IterationStats& it, double loss, uint32_t samples) {
  window_loss_ += loss;
  ++window_;
  if (++seen_ <= warmup_) return;
  iteration_ms_ += it.iteration_ms;
  comm_ms_ += it.pull_wait_ms + it.push_wait_ms;
  pull_wait_ms_ += it.pull_wait_ms;
  bytes_ += it.bytes_sent + it.bytes_received;
  messages_ += it.messages;
  dense_bytes_ += it.dense_bytes;
  push_bytes_ += it.push_bytes;
  samples_ += samples;
  ++iterations_;
}

bool Progress::Due(uint32_t clock) const {
  return static_cast<int>(clock) % log_every_ == 0 || static_cast<int>(clock) == clocks_;
}

void Progress::Log(uint32_t clock, double test_accuracy, const std::string& plan) {
  const double loss = window_ > 0 ? window_loss_ / window_ : 0;
  const std::string accuracy =
      test_accuracy < 0 ? std::string("-") : absl::StrFormat("%.4f", test_accuracy);
  std::printf(
      "worker %u clock %u loss %.4f test_accuracy %s samples/s %.0f comm_share %.3f "
      "bytes/iter %.0f compression %.1fx %s\n",
      rank_, clock, loss, accuracy.c_str(),
      iteration_ms_ > 0 ? samples_ / (iteration_ms_ / 1000) : 0.0,
      iteration_ms_ > 0 ? comm_ms_ / iteration_ms_ : 0.0,
      iterations_ > 0 ? double(bytes_) / iterations_ : 0.0,
      push_bytes_ > 0 ? double(dense_bytes_) / push_bytes_ : 1.0, plan.c_str());
  std::fflush(stdout);
  if (history_.is_open()) {
    history_ << absl::StrFormat("%.3f,%u,%.5f,%.5f\n",
                                absl::ToDoubleSeconds(absl::Now() - start_), clock, loss,
                                test_accuracy);
    history_.flush();
  }
  window_loss_ = 0;
  window_ = 0;
}

std::string Progress::Result(double test_accuracy, double test_loss) const {
  return absl::StrFormat(
      "{\"rank\": %u, \"clocks\": %d, \"test_accuracy\": %.5f, \"test_loss\": %.5f, "
      "\"samples_per_sec\": %.2f, \"comm_share\": %.5f, \"pull_wait_share\": %.5f, "
      "\"bytes_per_iter\": %.1f, \"messages_per_iter\": %.1f, \"compression_ratio\": %.3f, "
      "\"seconds\": %.3f, \"measured_clocks\": %d}",
      rank_, seen_, test_accuracy, test_loss,
      iteration_ms_ > 0 ? samples_ / (iteration_ms_ / 1000) : 0.0,
      iteration_ms_ > 0 ? comm_ms_ / iteration_ms_ : 0.0,
      iteration_ms_ > 0 ? pull_wait_ms_ / iteration_ms_ : 0.0,
      iterations_ > 0 ? double(bytes_) / iterations_ : 0.0,
      iterations_ > 0 ? double(messages_) / iterations_ : 0.0,
      push_bytes_ > 0 ? double(dense_bytes_) / push_bytes_ : 1.0,
      absl::ToDoubleSeconds(absl::Now() - start_), iterations_);
}

}  // namespace leeway
