#include "bench/sim/iteration_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>

#include "absl/strings/str_cat.h"
#include "bench/sim/fair_links.h"
#include "bench/sim/seeded.h"
#include "bench/sim/shared_cores.h"

namespace leeway {
namespace sim {
namespace {

struct Chunk {
  int tensor = 0;
  uint64_t elements = 0;
  int server = 0;
};

enum class Kind {
  kStartClock,
  kPullArrive,
  kReadDone,
  kPullDone,
  kBackwardEnd,
  kEncoded,
  kPushArrive,
  kApplied,
  kPublished,
  kAck,
  kCpuCheck,  // a CPU job may have ended (`clock`: which check is current)
  kNetCheck,  // a message on fair links may be through (likewise)
};

struct Event {
  double t;
  uint64_t seq;
  Kind kind;
  int worker;
  int item;   // chunk, or tensor for kBackwardEnd
  int clock;  // the worker's; for kCpuCheck its generation
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct WorkerState {
  int clock = -1;
  double gpu = 0;
  std::vector<int> missing;   // chunks of each tensor not yet pulled
  std::vector<bool> arrived;
  int arrived_count = 0;
  int forward_next = 0;
  double forward_end = 0;
  int backward_left = 0;      // tensors whose backward has not ended
  int pushes_outstanding = 0;
  std::vector<std::vector<int>> pull_queue;  // per server: chunks in forward order
  std::vector<size_t> pull_next;               // per server: the next to request
  std::vector<double> starts, ends, gpus;
};

class Simulation {
 public:
  // CPU processes: each worker's encoder, then each server's applies and
  // reads, then each server's publications made on push (its pool's idle
  // lane: they yield to the applies and reads, on a thread of their own).
  Simulation(const std::vector<Tensor>& model, const Cluster& cluster, const Job& job)
      : model_(model),
        cl_(cluster),
        job_(job),
        cpu_(cluster.cores, cluster.workers + 2 * cluster.servers),
        links_(LinkRates(cluster), cluster.flow_bytes_per_s) {}

  Result Run() {
    SplitIntoChunks();
    workers_.resize(cl_.workers);
    worker_tx_.assign(cl_.workers, 0);
    worker_rx_.assign(cl_.workers, 0);
    server_tx_.assign(cl_.servers, 0);
    server_rx_.assign(cl_.servers, 0);
    applied_.assign(chunks_.size() * job_.clocks, 0);
    read_.assign(chunks_.size() * job_.clocks, false);
    version_.assign(chunks_.size(), 0);
    built_at_.assign(chunks_.size(), -1);
    built_for_.assign(chunks_.size(), {});
    held_.assign(chunks_.size() * cl_.workers, -1);
    publishing_.assign(chunks_.size() * job_.clocks, false);
    awaiting_publication_.assign(chunks_.size() * job_.clocks, {});
    parked_.assign(chunks_.size() * job_.clocks, {});
    for (int w = 0; w < cl_.workers; ++w) Push({0, 0, Kind::kStartClock, w, 0, 0});
    while (!queue_.empty()) {
      const Event e = queue_.top();
      queue_.pop();
      Handle(e);
    }
    return Summarize();
  }

 private:
  void SplitIntoChunks() {
    const uint64_t per_chunk = std::max<uint64_t>(1, static_cast<uint64_t>(cl_.chunk_bytes / 4));
    tensor_chunks_.resize(model_.size());
    for (size_t t = 0; t < model_.size(); ++t) {
      for (uint64_t done = 0; done < model_[t].elements; done += per_chunk) {
        tensor_chunks_[t].push_back(static_cast<int>(chunks_.size()));
        chunks_.push_back({static_cast<int>(t), std::min(per_chunk, model_[t].elements - done), 0});
      }
    }
    // Largest first onto the least loaded server (the coordinator's LPT).
    std::vector<int> order(chunks_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return chunks_[a].elements > chunks_[b].elements; });
    std::vector<uint64_t> load(cl_.servers, 0);
    for (int c : order) {
      const int s = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      chunks_[c].server = s;
      load[s] += chunks_[c].elements;
    }
  }

  void Push(Event e) {
    e.seq = seq_++;
    queue_.push(e);
  }

  // A message through the sender's and the receiver's NIC; `then` happens
  // on its arrival. FIFO pipes: each NIC direction a queue of its own (so a
  // busy receiver delays this message, not the sender's next one to
  // someone else), and the message arrives after the later of its two.
  void Transfer(double* tx, double tx_rate, double* rx, double rx_rate, double t, double bytes,
                Event then) {
    *tx = std::max(t, *tx) + bytes / tx_rate;
    *rx = std::max(t, *rx) + bytes / rx_rate;
    then.t = std::max(*tx, *rx) + cl_.latency_s;
    Push(then);
  }
  void Send(int from_link, int to_link, double t, double bytes, Event then) {
    net_jobs_.push_back(then);
    const uint64_t token = net_jobs_.size() - 1;
    Arrived(links_.Submit(t, from_link, to_link, bytes, token,
                          WeightFrom(job_.seed, token, cl_.unfairness.SpreadAt(bytes))));
    ScheduleNetCheck();
  }
  void Arrived(const std::vector<FairLinks::Done>& done) {
    for (const FairLinks::Done& d : done) {
      Event then = net_jobs_[d.token];
      then.t = d.t + cl_.latency_s;
      Push(then);
    }
  }
  void ScheduleNetCheck() {
    const double t = links_.NextEnd();
    if (t < std::numeric_limits<double>::infinity()) {
      Push({t, 0, Kind::kNetCheck, 0, 0, ++net_check_});
    }
  }
  // Fair links, numbered: workers' transmit sides, their receive sides,
  // then the servers' likewise.
  static std::vector<double> LinkRates(const Cluster& c) {
    std::vector<double> rates(2 * c.workers, c.worker_bytes_per_s);
    rates.resize(rates.size() + 2 * c.servers, c.server_bytes_per_s);
    return rates;
  }
  void ToServer(int w, int s, double t, double bytes, Event then) {
    if (cl_.fair_links) {
      Send(w, 2 * cl_.workers + cl_.servers + s, t, bytes, then);
    } else {
      Transfer(&worker_tx_[w], cl_.worker_bytes_per_s, &server_rx_[s], cl_.server_bytes_per_s, t,
               bytes, then);
    }
  }
  void ToWorker(int s, int w, double t, double bytes, Event then) {
    if (cl_.fair_links) {
      Send(2 * cl_.workers + s, cl_.workers + w, t, bytes, then);
    } else {
      Transfer(&server_tx_[s], cl_.server_bytes_per_s, &worker_rx_[w], cl_.worker_bytes_per_s, t,
               bytes, then);
    }
  }

  // Runs `seconds` of CPU work for `process` from `now` on (after its
  // earlier jobs, on the shared cores if they are shared); `then` happens
  // when it ends.
  void RunCpu(int process, double now, double seconds, Event then) {
    cpu_jobs_.push_back(then);
    Ended(cpu_.Submit(now, process, seconds, cpu_jobs_.size() - 1));
    ScheduleCpuCheck();
  }
  void Ended(const std::vector<SharedCores::Done>& done) {
    for (const SharedCores::Done& d : done) {
      Event then = cpu_jobs_[d.token];
      then.t = d.t;
      Push(then);
    }
  }
  void ScheduleCpuCheck() {
    const double t = cpu_.NextEnd();
    if (t < std::numeric_limits<double>::infinity()) {
      Push({t, 0, Kind::kCpuCheck, 0, 0, ++cpu_check_});
    }
  }
  int ServerProcess(int chunk) const { return cl_.workers + chunks_[chunk].server; }
  int PublisherProcess(int chunk) const {
    return cl_.workers + cl_.servers + chunks_[chunk].server;
  }

  // What clock `c` pushes, pulls and costs: the dense plan's first.
  Job::Costs At(int c) const {
    if (c < job_.dense_clocks) return job_.dense;
    return {job_.push_bytes_per_element, job_.pull_bytes_per_element, job_.encode_s_per_element,
            job_.apply_s_per_element, job_.read_s_per_element, job_.reread_s_per_element};
  }

  // Uniform in [0, 1), from (seed, worker, clock).
  double Uniform(int w, int c) const {
    return UnitFrom(
        Mix(job_.seed * 1000003 + static_cast<uint64_t>(w) * 7919 + static_cast<uint64_t>(c)));
  }

  double GpuTime(int w, int c) const {
    if (job_.gpu_time) return job_.gpu_time(w, c);
    double g = job_.gpu_s * (w == 0 ? job_.straggler : 1);
    if (job_.jitter > 0) g *= 1 + job_.jitter * (2 * Uniform(w, c) - 1);
    return g;
  }

  void Handle(const Event& e) {
    WorkerState& ws = workers_[e.worker];
    switch (e.kind) {
      case Kind::kStartClock: StartClock(e.worker, e.t); break;
      case Kind::kPullArrive: {
        const int64_t need = e.clock - 1 - job_.staleness;
        if (job_.staleness < 0 || need < 0 || Applied(e.item, need) == cl_.workers) {
          Respond(e.worker, e.item, e.t);
        } else {
          parked_[Slot(e.item, need)].push_back(e.worker);
        }
        break;
      }
      case Kind::kReadDone: {
        const double bytes =
            chunks_[e.item].elements * At(e.clock).pull_bytes_per_element + cl_.header_bytes;
        ToWorker(chunks_[e.item].server, e.worker, e.t, bytes,
                 {0, 0, Kind::kPullDone, e.worker, e.item, e.clock});
        break;
      }
      case Kind::kPullDone: PullDone(e.worker, e.item, e.t); break;
      case Kind::kBackwardEnd: {
        const Tensor& tensor = model_[e.item];
        // Counted now, so that the clock cannot end while this encodes.
        ws.pushes_outstanding += static_cast<int>(tensor_chunks_[e.item].size());
        --ws.backward_left;
        RunCpu(e.worker, e.t, tensor.elements * At(ws.clock).encode_s_per_element,
               {0, 0, Kind::kEncoded, e.worker, e.item, ws.clock});
        break;
      }
      case Kind::kEncoded:
        for (int c : tensor_chunks_[e.item]) {
          const double bytes =
              chunks_[c].elements * At(e.clock).push_bytes_per_element + cl_.header_bytes;
          ToServer(e.worker, chunks_[c].server, e.t, bytes,
                   {0, 0, Kind::kPushArrive, e.worker, c, e.clock});
        }
        break;
      case Kind::kPushArrive:
        RunCpu(ServerProcess(e.item), e.t,
               chunks_[e.item].elements * At(e.clock).apply_s_per_element,
               {0, 0, Kind::kApplied, e.worker, e.item, e.clock});
        break;
      case Kind::kApplied: {
        ++version_[e.item];
        {
          const int staleness = std::max(0, most_completed_ - e.clock);
          if (staleness_counts_.size() <= static_cast<size_t>(staleness)) {
            staleness_counts_.resize(staleness + 1, 0);
          }
          ++staleness_counts_[staleness];
        }
        if (++applied_[Slot(e.item, e.clock)] == cl_.workers) {
          PublishAhead(e.item, e.clock + 1, e.t);
          std::vector<int> waiting;
          waiting.swap(parked_[Slot(e.item, e.clock)]);
          for (int w : waiting) Respond(w, e.item, e.t);
        }
        Push({e.t + cl_.latency_s, 0, Kind::kAck, e.worker, e.item, e.clock});
        break;
      }
      case Kind::kPublished: {
        const size_t slot = Slot(e.item, e.clock);
        publishing_[slot] = false;
        read_[slot] = true;  // the pulls of this clock reread it
        std::vector<int> waiting;
        waiting.swap(awaiting_publication_[slot]);
        for (int w : waiting) Respond(w, e.item, e.t);
        break;
      }
      case Kind::kAck:
        --ws.pushes_outstanding;
        MaybeEndClock(e.worker, e.t);
        break;
      case Kind::kNetCheck:
        if (e.clock != net_check_) break;
        Arrived(links_.AdvanceTo(e.t));
        ScheduleNetCheck();
        break;
      case Kind::kCpuCheck:
        if (e.clock != cpu_check_) break;  // a later check replaced this one
        Ended(cpu_.AdvanceTo(e.t));
        ScheduleCpuCheck();
        break;
    }
  }

  size_t Slot(int chunk, int64_t clock) const {
    return static_cast<size_t>(chunk) * job_.clocks + static_cast<size_t>(clock);
  }
  int Applied(int chunk, int64_t clock) const { return applied_[Slot(chunk, clock)]; }

  void StartClock(int w, double t) {
    WorkerState& ws = workers_[w];
    ++ws.clock;
    ws.gpu = GpuTime(w, ws.clock);
    ws.starts.push_back(t);
    ws.gpus.push_back(ws.gpu);
    ws.missing.assign(model_.size(), 0);
    ws.arrived.assign(model_.size(), false);
    ws.arrived_count = 0;
    ws.forward_next = 0;
    ws.forward_end = t;
    ws.backward_left = static_cast<int>(model_.size());
    ws.pull_queue.assign(cl_.servers, {});
    ws.pull_next.assign(cl_.servers, 0);
    for (size_t tensor = 0; tensor < model_.size(); ++tensor) {
      ws.missing[tensor] = static_cast<int>(tensor_chunks_[tensor].size());
      for (int c : tensor_chunks_[tensor]) ws.pull_queue[chunks_[c].server].push_back(c);
    }
    const size_t window = cl_.pull_window > 0 ? static_cast<size_t>(cl_.pull_window) : SIZE_MAX;
    for (int s = 0; s < cl_.servers; ++s) {
      for (size_t i = 0; i < window && i < ws.pull_queue[s].size(); ++i) RequestNextPull(w, s, t);
    }
  }

  // Pulls go to each server earliest chunk first; with a window, the next
  // leaves as a reply arrives.
  void RequestNextPull(int w, int s, double t) {
    WorkerState& ws = workers_[w];
    if (ws.pull_next[s] >= ws.pull_queue[s].size()) return;
    const int c = ws.pull_queue[s][ws.pull_next[s]++];
    ToServer(w, s, t, cl_.header_bytes, {0, 0, Kind::kPullArrive, w, c, ws.clock});
  }

  // With publications made on push: the server's publication of `chunk`
  // for `clock`, now that every worker's push of the clock before is in.
  void PublishAhead(int chunk, int clock, double t) {
    if (!job_.publish_on_push || clock >= job_.clocks) return;
    const size_t slot = Slot(chunk, clock);
    if (read_[slot] || publishing_[slot]) return;  // a pull published it
    publishing_[slot] = true;
    RunCpu(PublisherProcess(chunk), t, chunks_[chunk].elements * At(clock).read_s_per_element,
           {0, 0, Kind::kPublished, 0, chunk, clock});
  }

  void Respond(int w, int c, double t) {
    const int clock = workers_[w].clock;
    if (publishing_[Slot(c, clock)]) {
      awaiting_publication_[Slot(c, clock)].push_back(w);
      return;
    }
    const Job::Costs costs = At(clock);
    bool first = !read_[Slot(c, clock)];
    read_[Slot(c, clock)] = true;
    if (!job_.publish_on_push && !job_.published_pulls) {
      // A reply is reused by pulls naming the same versions (Chunk::Read):
      // the same version held, the chunk unchanged since it was built.
      // Under BSP every pull of a clock does; workers apart do not.
      if (built_at_[c] != version_[c]) {
        built_at_[c] = version_[c];
        built_for_[c].clear();
      }
      const int64_t since = held_[static_cast<size_t>(w) * chunks_.size() + c];
      first = std::find(built_for_[c].begin(), built_for_[c].end(), since) == built_for_[c].end();
      if (first) built_for_[c].push_back(since);
      held_[static_cast<size_t>(w) * chunks_.size() + c] = version_[c];
    }
    if (first) ++replies_built_;
    RunCpu(ServerProcess(c), t,
           chunks_[c].elements * (first ? costs.read_s_per_element : costs.reread_s_per_element),
           {0, 0, Kind::kReadDone, w, c, clock});
  }

  void PullDone(int w, int c, double t) {
    WorkerState& ws = workers_[w];
    if (cl_.pull_window > 0) RequestNextPull(w, chunks_[c].server, t);
    const int tensor = chunks_[c].tensor;
    if (--ws.missing[tensor] > 0) return;
    ws.arrived[tensor] = true;
    ++ws.arrived_count;
    const int n = static_cast<int>(model_.size());
    if (job_.overlap) {
      while (ws.forward_next < n && ws.arrived[ws.forward_next]) {
        ws.forward_end = std::max(ws.forward_end, t) +
                         model_[ws.forward_next].compute_share * ws.gpu / 3;
        ++ws.forward_next;
      }
      if (ws.forward_next < n) return;
    } else {
      if (ws.arrived_count < n) return;
      ws.forward_end = t + ws.gpu / 3;
    }
    // Backward in reverse; each tensor's push as its backward ends, or all
    // once the whole backward has.
    double at = ws.forward_end;
    std::vector<double> ends(n);
    for (int i = n - 1; i >= 0; --i) ends[i] = at += model_[i].compute_share * ws.gpu * 2 / 3;
    for (int i = n - 1; i >= 0; --i) {
      Push({job_.overlap ? ends[i] : at, 0, Kind::kBackwardEnd, w, i, ws.clock});
    }
  }

  void MaybeEndClock(int w, double t) {
    WorkerState& ws = workers_[w];
    if (ws.backward_left > 0 || ws.pushes_outstanding > 0) return;
    ws.ends.push_back(t);
    most_completed_ = std::max(most_completed_, static_cast<int>(ws.ends.size()));
    if (ws.clock + 1 < job_.clocks) Push({t, 0, Kind::kStartClock, w, 0, 0});
  }

  Result Summarize() const {
    Result r;
    const int measured = job_.clocks - job_.warmup_clocks;
    for (const WorkerState& ws : workers_) {
      const double wall = ws.ends.back() - ws.starts[job_.warmup_clocks];
      double gpu = 0;
      for (int c = job_.warmup_clocks; c < job_.clocks; ++c) gpu += ws.gpus[c];
      r.seconds_per_clock += wall / measured / cl_.workers;
      r.samples_per_s += job_.samples_per_iteration * measured / wall;
      r.comm_share += (wall - gpu) / wall / cl_.workers;
    }
    r.replies_built = replies_built_;
    // The smallest value that 99% of the applied pushes do not exceed.
    int64_t pushes = 0;
    for (int64_t n : staleness_counts_) pushes += n;
    const int64_t rank = static_cast<int64_t>(std::ceil(0.99 * pushes));
    int64_t seen = 0;
    for (size_t v = 0; v < staleness_counts_.size(); ++v) {
      seen += staleness_counts_[v];
      if (seen >= rank) {
        r.staleness_p99 = static_cast<double>(v);
        break;
      }
    }
    for (const Chunk& c : chunks_) {
      r.bytes_per_iteration += 3 * cl_.header_bytes +
                               c.elements * (job_.push_bytes_per_element + job_.pull_bytes_per_element);
    }
    return r;
  }

  const std::vector<Tensor>& model_;
  const Cluster& cl_;
  const Job& job_;
  std::vector<Chunk> chunks_;
  std::vector<std::vector<int>> tensor_chunks_;
  std::vector<WorkerState> workers_;
  std::vector<double> worker_tx_, worker_rx_, server_tx_, server_rx_;
  SharedCores cpu_;
  std::vector<Event> cpu_jobs_;  // what each CPU job's end sets off, by token
  int cpu_check_ = 0;
  FairLinks links_;
  std::vector<Event> net_jobs_;  // what each message's arrival sets off, by token
  int net_check_ = 0;
  std::vector<int> applied_;
  std::vector<bool> read_;        // (chunk, clock): pulled or published already
  std::vector<int64_t> version_;  // per chunk: pushes applied
  std::vector<int64_t> built_at_;                // per chunk: the version its replies are of
  std::vector<std::vector<int64_t>> built_for_;  // per chunk: the held versions they answer
  // Applied pushes by staleness (the most clocks any worker has completed
  // minus the push's clock), and that most.
  std::vector<int64_t> staleness_counts_;
  int most_completed_ = 0;
  int64_t replies_built_ = 0;                    // pulls that paid the read
  std::vector<int64_t> held_;     // (worker, chunk): the version last pulled, -1: none
  std::vector<bool> publishing_;  // (chunk, clock): a publication on push runs
  std::vector<std::vector<int>> awaiting_publication_;  // workers whose pulls wait for it
  std::vector<std::vector<int>> parked_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  uint64_t seq_ = 0;
};

}  // namespace

absl::StatusOr<Result> Simulate(const std::vector<Tensor>& model, const Cluster& cluster,
                                const Job& job) {
  if (model.empty()) return absl::InvalidArgumentError("the model has no tensors");
  for (const Tensor& t : model) {
    if (t.elements == 0 || t.compute_share < 0) {
      return absl::InvalidArgumentError("every tensor needs elements and a share >= 0");
    }
  }
  if (cluster.workers < 1 || cluster.servers < 1 || cluster.worker_bytes_per_s <= 0 ||
      cluster.server_bytes_per_s <= 0 || cluster.latency_s < 0 || cluster.chunk_bytes < 4 ||
      cluster.cores < 0 || cluster.flow_bytes_per_s < 0) {
    return absl::InvalidArgumentError(
        "need workers, servers >= 1, positive rates, chunks >= 4 bytes, cores >= 0, a flow cap "
        ">= 0");
  }
  if (job.warmup_clocks < 0 || job.clocks <= job.warmup_clocks || job.gpu_s < 0 ||
      job.jitter < 0 || job.jitter >= 1 || job.straggler <= 0 || job.dense_clocks < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "need clocks > warm-up clocks >= 0, gpu_s >= 0, 0 <= jitter < 1, straggler > 0, "
        "dense clocks >= 0 (clocks ",
        job.clocks, ", warm-up ", job.warmup_clocks, ")"));
  }
  return Simulation(model, cluster, job).Run();
}

absl::StatusOr<Result> SimulateMedian(const std::vector<Tensor>& model, const Cluster& cluster,
                                      const Job& job, int seeds) {
  if (seeds < 1) return absl::InvalidArgumentError("need a seed or more");
  std::vector<Result> runs;
  Job seeded = job;
  for (int i = 0; i < seeds; ++i, ++seeded.seed) {
    absl::StatusOr<Result> r = Simulate(model, cluster, seeded);
    if (!r.ok()) return r.status();
    runs.push_back(*r);
  }
  std::sort(runs.begin(), runs.end(),
            [](const Result& a, const Result& b) { return a.samples_per_s < b.samples_per_s; });
  return runs[(runs.size() - 1) / 2];
}

}  // namespace sim
}  // namespace leeway
