// A small process-wide thread pool for the CPU kernels.
//
// ParallelFor(n, grain, threads, fn) splits [0, n) into blocks whose sizes
// are multiples of `grain` (the last one may be shorter) and calls
// fn(begin, end) once for each, on at most `threads` threads of which the
// caller is one. It returns when every block is done. The pool has one
// thread fewer than the machine has hardware threads (the caller is the
// other), or LEEWAY_KERNEL_THREADS - 1; it is created on first use, so a
// single-threaded call never starts it.
//
// No oversubscription and no deadlock: helpers only take blocks that are
// still unclaimed, and the caller claims blocks too, so a call completes
// even when every pool thread is busy with other calls.
#ifndef LEEWAY_KERNELS_PARALLEL_FOR_H_
#define LEEWAY_KERNELS_PARALLEL_FOR_H_

#include <cstddef>
#include <functional>

namespace leeway {

// Threads a kernel may use: the pool's size plus the caller.
int KernelThreads();

// threads <= 0 means KernelThreads().
void ParallelFor(size_t n, size_t grain, int threads,
                 const std::function<void(size_t begin, size_t end)>& fn);

}  // namespace leeway

#endif  // LEEWAY_KERNELS_PARALLEL_FOR_H_
