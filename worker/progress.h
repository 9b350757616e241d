// What leeway-worker reports about its run: per-iteration accounting
// (samples, time blocked on communication - on pulls, and in all - bytes),
// the progress line every
// `log_every` clocks, the history file (seconds,clock,loss,test_accuracy
// lines, for `leeway launch --plot`) and the final RESULT object that
// `leeway launch` folds into its summary. The first `warmup` iterations
// (the dense first pull, the first plans) count in `clocks` but not in the
// figures, which then describe the steady state. One training thread.
#ifndef LEEWAY_WORKER_PROGRESS_H_
#define LEEWAY_WORKER_PROGRESS_H_

#include <cstdint>
#include <fstream>
#include <string>

#include "absl/time/time.h"
#include "worker/worker.h"

namespace leeway {

class Progress {
 public:
  // `history_path` empty: no history file.
  Progress(uint32_t rank, int clocks, int log_every, const std::string& history_path,
           int warmup = 0);

  // After each Clock: the iteration the runtime measured, the training
  // loss (0 when there is none) and the samples it processed.
  void Iteration(const IterationStats& it, double loss, uint32_t samples);
  // Whether the clock just completed gets a progress line.
  bool Due(uint32_t clock) const;
  // Prints it (test_accuracy < 0: not evaluated) and appends the history.
  void Log(uint32_t clock, double test_accuracy, const std::string& plan);
  // The final summary as one JSON object (test_accuracy < 0: none).
  std::string Result(double test_accuracy, double test_loss) const;

 private:
  const uint32_t rank_;
  const int clocks_;
  const int log_every_;
  const int warmup_;
  int seen_ = 0;  // iterations, warm-up included
  std::ofstream history_;
  const absl::Time start_;
  double iteration_ms_ = 0, comm_ms_ = 0, pull_wait_ms_ = 0;  // comm: pulls and pushes
  uint64_t bytes_ = 0, messages_ = 0, dense_bytes_ = 0, push_bytes_ = 0, samples_ = 0;
  int iterations_ = 0;
  double window_loss_ = 0;
  int window_ = 0;
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_PROGRESS_H_
