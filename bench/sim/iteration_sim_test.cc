#include "bench/sim/iteration_sim.h"

#include <algorithm>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace sim {
namespace {

// Every case below is worked out by hand in its comment: 4,000-byte tensors
// (1,000 fp32 elements) over 4,000 B/s links take 1 s each, headers and
// latency are zero unless said otherwise.
Cluster Slow(int workers, int servers) {
  Cluster c;
  c.workers = workers;
  c.servers = servers;
  c.worker_bytes_per_s = c.server_bytes_per_s = 4000;
  c.header_bytes = 0;
  return c;
}

// Links too fast to count.
Cluster NoNetworkCost(int workers, int servers) {
  Cluster c = Slow(workers, servers);
  c.worker_bytes_per_s = c.server_bytes_per_s = 1e18;
  return c;
}

Job Plain(double gpu_s, int clocks) {
  Job j;
  j.gpu_s = gpu_s;
  j.clocks = clocks;
  j.warmup_clocks = 1;
  j.samples_per_iteration = 10;
  return j;
}

TEST_CASE("one worker: pull, forward, backward, push, in series") {
  // Pull 1 s, forward 1 s, backward 2 s, push 1 s: 5 s a clock, 2 of them
  // communication.
  auto r = Simulate({{1000, 1.0}}, Slow(1, 1), Plain(3, 4));
  REQUIRE(r.ok());
  CHECK(r->seconds_per_clock == Approx(5));
  CHECK(r->comm_share == Approx(0.4));
  CHECK(r->samples_per_s == Approx(10.0 / 5));
  CHECK(r->bytes_per_iteration == Approx(8000));
}

TEST_CASE("two workers on one server queue at its NIC") {
  // Clock 0: the server sends w0's pull 0-1, w1's 1-2; w0 computes 1-4 and
  // pushes 4-5, w1 computes 2-5 and pushes 5-6. From then on every clock
  // repeats 6 s later (w0's clock 1 pull waits for w1's push at 6).
  auto r = Simulate({{1000, 1.0}}, Slow(2, 1), Plain(3, 5));
  REQUIRE(r.ok());
  CHECK(r->seconds_per_clock == Approx(6));
  CHECK(r->comm_share == Approx(0.5));
}

TEST_CASE("on fair links two workers share the server's NIC instead") {
  // Both pulls at 2,000 B/s, through at 2; compute 2-5; both pushes share
  // the server's receive side 5-7: 7 s a clock, 4 of them communication.
  Cluster fair = Slow(2, 1);
  fair.fair_links = true;
  auto r = Simulate({{1000, 1.0}}, fair, Plain(3, 5));
  REQUIRE(r.ok());
  CHECK(r->seconds_per_clock == Approx(7));
  CHECK(r->comm_share == Approx(4.0 / 7));
  // One worker whose connection gets at most half the link: pull 2 s,
  // compute 3 s, push 2 s.
  fair.workers = 1;
  fair.flow_bytes_per_s = 2000;
  r = Simulate({{1000, 1.0}}, fair, Plain(3, 5));
  REQUIRE(r.ok());
  CHECK(r->seconds_per_clock == Approx(7));
}

TEST_CASE("unfair shares: nothing for a lone connection, a spread for shared ones") {
  // One worker: each message has its links to itself, so the weights do
  // not matter (pull 2 s at the cap, compute 3 s, push 2 s).
  Cluster fair = Slow(1, 1);
  fair.fair_links = true;
  fair.flow_bytes_per_s = 2000;
  fair.unfairness.points = {{1, 0.5}};
  auto r = Simulate({{1000, 1.0}}, fair, Plain(3, 5));
  REQUIRE(r.ok());
  CHECK(r->seconds_per_clock == Approx(7));
  // Two workers (the case above, 7 s a clock with equal shares): the
  // server's links are still through with both messages after 2 s, but
  // one worker has its pull first and starts computing sooner, so a clock
  // takes no longer, and SSP lets that lead pay: its clocks overlap the
  // other's pulls.
  fair = Slow(2, 1);
  fair.fair_links = true;
  fair.unfairness.points = {{1, 0.5}};
  Job job = Plain(3, 12);
  job.overlap = false;
  auto bsp = Simulate({{1000, 1.0}}, fair, job);
  job.staleness = 2;
  auto ssp = Simulate({{1000, 1.0}}, fair, job);
  REQUIRE(bsp.ok());
  REQUIRE(ssp.ok());
  CHECK(bsp->seconds_per_clock <= 7 + 1e-9);
  CHECK(ssp->seconds_per_clock < bsp->seconds_per_clock * 0.97);
  // The same seed, the same draws; another seed, others.
  auto again = Simulate({{1000, 1.0}}, fair, job);
  job.seed = 2;
  auto other = Simulate({{1000, 1.0}}, fair, job);
  REQUIRE(again.ok());
  REQUIRE(other.ok());
  CHECK(again->seconds_per_clock == ssp->seconds_per_clock);
  CHECK(other->seconds_per_clock != ssp->seconds_per_clock);
  // Of seeds 1, 2, 3, the median run by samples/s.
  job.seed = 1;
  std::vector<double> rates;
  for (int seed = 1; seed <= 3; ++seed, ++job.seed) {
    rates.push_back(Simulate({{1000, 1.0}}, fair, job)->samples_per_s);
  }
  std::sort(rates.begin(), rates.end());
  job.seed = 1;
  auto median = SimulateMedian({{1000, 1.0}}, fair, job, 3);
  REQUIRE(median.ok());
  CHECK(median->samples_per_s == rates[1]);
  CHECK(!SimulateMedian({{1000, 1.0}}, fair, job, 0).ok());
}

TEST_CASE("pipelining overlaps one tensor's push with the next one's backward") {
  // Two tensors, half the compute each, gpu 3 s. With overlap: pulls 0-1 and
  // 1-2, forward 1-1.5 and 2-2.5, backward of tensor 1 2.5-3.5 (its push
  // 3.5-4.5) and of tensor 0 3.5-4.5 (push 4.5-5.5): 5.5 s a clock.
  // Without: pulls 0-2, forward 2-3, backward 3-5, pushes 5-7: 7 s.
  const std::vector<Tensor> model = {{1000, 0.5}, {1000, 0.5}};
  Job job = Plain(3, 4);
  auto overlapped = Simulate(model, Slow(1, 1), job);
  job.overlap = false;
  auto serial = Simulate(model, Slow(1, 1), job);
  REQUIRE(overlapped.ok());
  REQUIRE(serial.ok());
  CHECK(overlapped->seconds_per_clock == Approx(5.5));
  CHECK(serial->seconds_per_clock == Approx(7));
}

TEST_CASE("SSP absorbs alternating speeds that BSP waits out") {
  // An infinitely fast network; w0 takes 2 s every clock, w1 3 s and 1 s in
  // turn. BSP: w0 runs 0-2, 3-5, 5-7, 8-10, ... and ends clock 7 at 20;
  // w1 runs 0-3, 3-4, 5-8, 8-9, ... and ends at 19: 2.5 and 2.375 s a clock.
  // With s = 1 a pull at clock c needs the pushes of clock c - 2, which are
  // always there: both run at their own mean, 2 s.
  Cluster fast = NoNetworkCost(2, 1);
  Job job = Plain(0, 8);
  job.warmup_clocks = 0;
  job.gpu_time = [](int w, int c) { return w == 0 ? 2.0 : (c % 2 == 0 ? 3.0 : 1.0); };
  auto bsp = Simulate({{1000, 1.0}}, fast, job);
  job.staleness = 1;
  auto ssp = Simulate({{1000, 1.0}}, fast, job);
  job.staleness = -1;
  auto asp = Simulate({{1000, 1.0}}, fast, job);
  REQUIRE(bsp.ok());
  REQUIRE(ssp.ok());
  REQUIRE(asp.ok());
  CHECK(bsp->seconds_per_clock == Approx((2.5 + 2.375) / 2));
  CHECK(ssp->seconds_per_clock == Approx(2));
  CHECK(asp->seconds_per_clock == Approx(2));
  // Under BSP each computes 16 s: w0 waits 4 of its 20 s, w1 3 of its 19.
  CHECK(bsp->comm_share == Approx((4.0 / 20 + 3.0 / 19) / 2));
  CHECK(ssp->comm_share == Approx(0).margin(1e-9));
}

TEST_CASE("compression, servers, latency and CPU costs enter as stated") {
  // One tensor of 2,000 elements in 1,000-element chunks on two servers;
  // pushes of 1 byte/element (the codec), dense pulls, 0.1 s latency, 1 ms
  // of encode per 1,000 elements... worked: pull requests arrive at 0.1,
  // the chunks leave the servers at 0.1 and share w0's NIC: 0.1-1.1 and
  // 1.1-2.1, arriving 2.2. Forward 2.2-3.2, backward 3.2-5.2, encode
  // 0.002 s, pushes of 1,000 bytes 0.25 s each back to back: 5.202-5.452,
  // 5.452-5.702, arriving 5.802, applied 0.5 ms later (0.25 ms per 1,000
  // elements), acked at 5.9025 + 0.1... the last ack at 5.9025.
  Cluster c = Slow(1, 2);
  c.latency_s = 0.1;
  c.chunk_bytes = 4000;
  Job job = Plain(3, 3);
  job.push_bytes_per_element = 1;
  job.encode_s_per_element = 1e-6;
  job.apply_s_per_element = 0.25e-6;
  auto r = Simulate({{2000, 1.0}}, c, job);
  REQUIRE(r.ok());
  // pull: 0.1 + 2 + 0.1; compute 3; encode 0.002; pushes 0.5 + 0.1;
  // apply 0.00025 (the second chunk's, on its own server); ack 0.1.
  CHECK(r->seconds_per_clock == Approx(0.1 + 2 + 0.1 + 3 + 0.002 + 0.5 + 0.1 + 0.00025 + 0.1));
  CHECK(r->bytes_per_iteration == Approx(2000 * 5));
}

TEST_CASE("whole requests first come, first served, or one at a time") {
  // Two workers, one server, two tensors each, no compute, asynchronous,
  // one clock. All requests at once: the server sends w0's chunks 0-1 and
  // 1-2, w1's 2-3 and 3-4; w0 pushes 2-4 and ends at 4, w1 pushes 4-6 and
  // ends at 6. One at a time: w0's first 0-1, w1's first 1-2, w0's second
  // 2-3, w1's second 3-4; w0 pushes 3-5 (ends 5), w1's pushes wait for the
  // server's NIC, 5-7 (ends 7).
  const std::vector<Tensor> model = {{1000, 0.5}, {1000, 0.5}};
  Cluster c = Slow(2, 1);
  Job job = Plain(0, 1);
  job.warmup_clocks = 0;
  job.staleness = -1;
  auto all = Simulate(model, c, job);
  c.pull_window = 1;
  auto one = Simulate(model, c, job);
  REQUIRE(all.ok());
  REQUIRE(one.ok());
  CHECK(all->seconds_per_clock == Approx((4.0 + 6.0) / 2));
  CHECK(one->seconds_per_clock == Approx((5.0 + 7.0) / 2));
}

TEST_CASE("a straggler sets the pace of BSP") {
  // Worker 0 is 1.5x slower: 4.5 s of compute; no network cost.
  Cluster fast = NoNetworkCost(3, 1);
  Job job = Plain(3, 5);
  job.straggler = 1.5;
  auto r = Simulate({{1000, 1.0}}, fast, job);
  REQUIRE(r.ok());
  CHECK(r->seconds_per_clock == Approx(4.5));
  CHECK(r->comm_share == Approx((0 + 1.5 / 4.5 + 1.5 / 4.5) / 3));
}

TEST_CASE("processes on a machine of few cores queue for them") {
  // No network cost, no GPU time; each worker's encode takes 1 s a clock.
  // Each with CPU of its own, both encode at once: 1 s a clock. Sharing one
  // core, both encode at half speed, 0-2, and the next clock's pulls wait
  // for their pushes: 2 s a clock.
  Cluster fast = NoNetworkCost(2, 1);
  Job job = Plain(0, 5);
  job.encode_s_per_element = 1e-3;
  auto own = Simulate({{1000, 1.0}}, fast, job);
  fast.cores = 1;
  auto shared = Simulate({{1000, 1.0}}, fast, job);
  REQUIRE(own.ok());
  REQUIRE(shared.ok());
  CHECK(own->seconds_per_clock == Approx(1));
  CHECK(shared->seconds_per_clock == Approx(2));
}

TEST_CASE("a server spends CPU on every pull it answers") {
  // One worker, no network cost or GPU time: reading the chunk for the
  // pull takes 1 s, applying the push 0.5 s: 1.5 s a clock.
  Cluster fast = NoNetworkCost(1, 1);
  Job job = Plain(0, 4);
  job.read_s_per_element = 1e-3;
  job.apply_s_per_element = 0.5e-3;
  auto r = Simulate({{1000, 1.0}}, fast, job);
  REQUIRE(r.ok());
  CHECK(r->seconds_per_clock == Approx(1.5));
  // Two workers: the second pull of a clock reuses the first one's delta
  // (0.2 s), then both pushes apply: 1 + 0.2 + 0.5 + 0.5 = 2.2 s a clock.
  fast.workers = 2;
  job.reread_s_per_element = 0.2e-3;
  r = Simulate({{1000, 1.0}}, fast, job);
  REQUIRE(r.ok());
  CHECK(r->seconds_per_clock == Approx(2.2));
  CHECK(r->replies_built == 4);  // one a clock
  // Workers apart (w1 3 s a clock, w0 none; asynchronous): both first
  // pulls find the chunk as it started and share a reply; after that the
  // chunk has changed between any two pulls, so each builds its own.
  job.staleness = -1;
  job.gpu_time = [](int w, int) { return w == 1 ? 3.0 : 0.0; };
  r = Simulate({{1000, 1.0}}, fast, job);
  REQUIRE(r.ok());
  CHECK(r->replies_built == 7);
  // Top-k pulls read the clock's publication: the later pull of a clock
  // reuses it however far apart the workers are.
  job.published_pulls = true;
  r = Simulate({{1000, 1.0}}, fast, job);
  REQUIRE(r.ok());
  CHECK(r->replies_built == 4);
}

TEST_CASE("publications made on push leave the pulls' path") {
  // One worker, no network cost; tensors t0 and t1, 1,000 elements each,
  // half the GPU time each (gpu 3 s: forward 0.5 s, backward 1 s a
  // tensor); the first read of a chunk a clock (its publication) 1 s, an
  // apply 0.25 s. On pull, a clock from 0: reads 0-1 and 1-2, forward 1-1.5
  // and 2-2.5, backward t1 2.5-3.5 and t0 3.5-4.5, each pushed and applied
  // as it ends (t0's 4.5-4.75): 4.75 s a clock. On push: t1's publication
  // for the next clock runs 3.75-4.75 beside t0's apply (4.5-4.75, not
  // behind it), t0's 4.75-5.75; the next clock's pull of t1 is answered at
  // once, t0's at 5.75 (forward 5.75-6.75, backward 6.75-8.75, t0's apply
  // 8.75-9): 4.25 s a clock.
  Cluster fast = NoNetworkCost(1, 1);
  Job job = Plain(3, 4);
  job.read_s_per_element = 1e-3;
  job.apply_s_per_element = 0.25e-3;
  const std::vector<Tensor> model = {{1000, 0.5}, {1000, 0.5}};
  auto on_pull = Simulate(model, fast, job);
  job.publish_on_push = true;
  auto on_push = Simulate(model, fast, job);
  REQUIRE(on_pull.ok());
  REQUIRE(on_push.ok());
  CHECK(on_pull->seconds_per_clock == Approx(4.75));
  CHECK(on_push->seconds_per_clock == Approx(4.25));
}

TEST_CASE("a dense first plan, then the planned bytes") {
  // One worker, no GPU time, 1,000 elements. A dense clock pulls and pushes
  // 4,000 bytes: 1 s each way. The plan's clocks move 0.4 bytes an element
  // each way: 0.1 s each way. Clocks 0-1 dense, 2-3 planned; clock 0 is the
  // warm-up: (2 + 0.2 + 0.2) / 3 s a clock.
  Job job = Plain(0, 4);
  job.push_bytes_per_element = job.pull_bytes_per_element = 0.4;
  job.dense_clocks = 2;
  auto r = Simulate({{1000, 1.0}}, Slow(1, 1), job);
  REQUIRE(r.ok());
  CHECK(r->seconds_per_clock == Approx(2.4 / 3));
}

TEST_CASE("bad parameters are errors") {
  CHECK_FALSE(Simulate({}, Slow(1, 1), Plain(1, 3)).ok());
  CHECK_FALSE(Simulate({{0, 1.0}}, Slow(1, 1), Plain(1, 3)).ok());
  CHECK_FALSE(Simulate({{10, 1.0}}, Slow(0, 1), Plain(1, 3)).ok());
  Job job = Plain(1, 1);  // no measured clock after the warm-up
  CHECK_FALSE(Simulate({{10, 1.0}}, Slow(1, 1), job).ok());
  job = Plain(1, 3);
  job.jitter = 1;
  CHECK_FALSE(Simulate({{10, 1.0}}, Slow(1, 1), job).ok());
  job = Plain(1, 3);
  job.dense_clocks = -1;
  CHECK_FALSE(Simulate({{10, 1.0}}, Slow(1, 1), job).ok());
  Cluster negative = Slow(1, 1);
  negative.cores = -1;
  CHECK_FALSE(Simulate({{10, 1.0}}, negative, Plain(1, 3)).ok());
  negative.cores = 0;
  negative.flow_bytes_per_s = -1;
  CHECK_FALSE(Simulate({{10, 1.0}}, negative, Plain(1, 3)).ok());
}

}  // namespace
}  // namespace sim
}  // namespace leeway
