#include "worker/worker.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/common/logging.h"
#include "worker/worker_impl.h"

namespace leeway {
namespace {

// How long a server may take to declare its chunks (get its shard map).
constexpr absl::Duration kChunkDeclareWait = absl::Seconds(30);

CodecParams ParamsFromPlan(const v1::LayerPlan& plan, int threads) {
  CodecParams p;
  p.codec = static_cast<CodecId>(plan.codec());
  p.density = plan.density() > 0 ? plan.density() : 1.0f;
  p.values = static_cast<CodecId>(plan.value_codec());
  p.threads = threads;
  return p;
}

}  // namespace

Worker::Impl::~Impl() {
  StopThreads();
  session.reset();
  servers.clear();
  data_plane.reset();
}

absl::Status Worker::Impl::Connect() {
  // Register first: the data plane stamps every message with the rank the
  // coordinator assigns. (Nobody connects to a worker, so its UCP address
  // is not published.)
  ControlSessionOptions copt;
  copt.coordinator = options.coordinator;
  copt.token = options.token;
  copt.host = options.host;
  copt.rank = options.rank;
  absl::StatusOr<std::unique_ptr<ControlSession>> registered =
      ControlSession::Register(copt, absl::Now() + options.register_timeout);
  if (!registered.ok()) return registered.status();
  session = *std::move(registered);
  if (session->registration().job_id() != options.job_id) {
    return absl::FailedPreconditionError(
        absl::StrCat("the coordinator runs job ", session->registration().job_id(),
                     ", this worker was started for job ", options.job_id));
  }
  TransportOptions topt;
  topt.job_id = options.job_id;
  topt.token = options.token;
  topt.rank = session->registration().rank();
  topt.peer_timeout = options.peer_timeout;
  absl::StatusOr<std::unique_ptr<DataPlane>> created =
      DataPlane::Create(topt, options.ready_file);
  if (!created.ok()) return created.status();
  data_plane = *std::move(created);
  session->Start();
  return absl::OkStatus();
}

absl::Status Worker::Impl::RegisterLayers(const std::vector<LayerDefinition>& defs) {
  if (!layers.empty()) return absl::FailedPreconditionError("layers already registered");
  v1::RegisterLayersRequest request;
  request.set_rank(session->registration().rank());
  for (size_t i = 0; i < defs.size(); ++i) {
    v1::LayerSpec* spec = request.add_layers();
    spec->set_id(static_cast<uint32_t>(i));
    spec->set_name(defs[i].name);
    uint64_t elements = 1;
    for (int64_t d : defs[i].shape) {
      if (d <= 0) return absl::InvalidArgumentError(absl::StrCat(defs[i].name, ": bad shape"));
      spec->add_shape(d);
      elements *= static_cast<uint64_t>(d);
    }
    if (elements != defs[i].initial.size()) {
      return absl::InvalidArgumentError(absl::StrCat(defs[i].name, ": ", defs[i].initial.size(),
                                                     " initial values for ", elements,
                                                     " elements"));
    }
    spec->set_elements(elements);
    spec->set_dtype(v1::DTYPE_F32);
    *spec->mutable_optimizer() = defs[i].optimizer;
  }
  // UNAVAILABLE while the expected servers register.
  absl::StatusOr<v1::ShardMap> map;
  const absl::Time deadline = absl::Now() + options.register_timeout;
  while (true) {
    map = session->client().RegisterLayers(request);
    if (map.ok() || map.status().code() != absl::StatusCode::kUnavailable ||
        absl::Now() >= deadline) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  if (!map.ok()) return map.status();

  std::map<uint32_t, ServerLink*> by_rank;
  for (const v1::Member& m : map->servers()) {
    auto link = std::make_unique<ServerLink>();
    link->rank = m.rank();
    absl::StatusOr<std::shared_ptr<ServerClient>> client = ConnectServer(m);
    if (!client.ok()) return client.status();
    {
      absl::MutexLock lock(&link->mu);
      link->incarnation = m.incarnation();
      link->client = *std::move(client);
    }
    by_rank[m.rank()] = link.get();
    servers.push_back(std::move(link));
  }
  layers.resize(defs.size());
  for (size_t i = 0; i < defs.size(); ++i) layers[i].spec = map->layers(static_cast<int>(i));
  for (const v1::ChunkAssignment& c : map->chunks()) {
    auto server = by_rank.find(c.server_rank());
    if (c.layer() >= layers.size() || server == by_rank.end() || c.elements() > UINT32_MAX) {
      return absl::DataLossError(absl::StrCat("shard map ", map->version(),
                                              " has a bad chunk for layer ", c.layer()));
    }
    ChunkState chunk;
    chunk.chunk = c.chunk();
    chunk.offset = c.offset_elements();
    chunk.elements = static_cast<uint32_t>(c.elements());
    chunk.server = server->second;
    layers[c.layer()].chunks.push_back(std::move(chunk));
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerState& layer = layers[i];
    std::sort(layer.chunks.begin(), layer.chunks.end(),
              [](const ChunkState& a, const ChunkState& b) { return a.offset < b.offset; });
    for (const ChunkState& c : layer.chunks) {
      layer.slices.push_back({c.chunk, c.offset, c.elements});
    }
    absl::Status valid =
        ValidateLayerCompression(layer.spec.elements(), layer.slices, options.momentum);
    if (!valid.ok()) return valid;
    layer.params.threads = options.codec_threads;
  }
  layer_stats.assign(layers.size(), LayerWindowStats());

  // Join every server (the latest start clock wins), then offer the
  // initial values: the first worker's are kept.
  for (auto& server : servers) {
    absl::MutexLock lock(&server->mu);
    absl::StatusOr<uint32_t> start = server->client->Join();
    if (!start.ok()) return start.status();
    server->view = *start;
    clock = std::max(clock, *start);
  }
  for (auto& server : servers) {  // servers that started this worker earlier
    absl::MutexLock lock(&server->mu);
    if (server->view == clock) continue;
    absl::StatusOr<uint32_t> start = server->client->Join(clock);
    if (!start.ok()) return start.status();
    server->view = *start;
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    for (const ChunkState& c : layers[i].chunks) {
      const auto values = absl::MakeConstSpan(defs[i].initial).subspan(c.offset, c.elements);
      std::shared_ptr<ServerClient> client;
      {
        absl::MutexLock lock(&c.server->mu);
        client = c.server->client;
      }
      absl::StatusOr<bool> init = client->InitializeWhenDeclared(
          static_cast<uint32_t>(i), c.chunk, values, absl::Now() + kChunkDeclareWait);
      if (!init.ok()) {
        return absl::Status(init.status().code(),
                            absl::StrCat("initializing layer ", layers[i].spec.name(), " chunk ",
                                         c.chunk, ": ", init.status().message()));
      }
    }
  }
  session->SetClock(clock);
  // The plan in force now, so that the first iterations are compressed
  // too (the heartbeat thread fetches the later ones).
  absl::StatusOr<v1::CompressionPlan> current = session->client().GetPlan(0);
  if (current.ok() && current->version() > 0) next_plan = *current;
  if (std::optional<v1::CompressionPlan> plan = session->TakePlan()) {
    if (!next_plan || plan->version() > next_plan->version()) next_plan = *plan;
  }
  if (next_plan && next_plan->effective_clock() <= clock) ApplyPlan(*next_plan);
  StartThreads();
  iteration_start = absl::Now();
  transport_at_start = data_plane->stats();
  LEEWAY_LOG(INFO) << "worker " << session->registration().rank() << ": " << layers.size()
                   << " layers on " << servers.size() << " servers, starting at clock "
                   << clock;
  return absl::OkStatus();
}

void Worker::Impl::ApplyPlan(const v1::CompressionPlan& plan) {
  for (const v1::LayerPlan& p : plan.layers()) {
    if (p.layer() < layers.size()) layers[p.layer()].params = ParamsFromPlan(p, options.codec_threads);
  }
  plan_version = plan.version();
  next_plan.reset();
}

absl::Status Worker::Impl::WaitAccounted(const Ticket& ticket, double* blocked_ms) {
  const absl::Time start = absl::Now();
  // A lost server may be restarted meanwhile (worker_recovery.cc).
  absl::Status status = ticket.Wait(start + options.timeout + options.server_recovery_timeout);
  *blocked_ms += absl::ToDoubleMilliseconds(absl::Now() - start);
  return status;
}

absl::Status Worker::Impl::Clock(const IterationInfo& info) {
  FlushPushes();
  absl::Status pushed;
  for (const Ticket& t : pending_pushes) {
    absl::Status s = WaitAccounted(t, &push_wait_ms);
    if (pushed.ok() && !s.ok()) pushed = s;
  }
  pending_pushes.clear();
  if (!pushed.ok()) return pushed;
  const absl::Time clock_start = absl::Now();
  for (auto& server : servers) {
    absl::Status s = SendClock(server.get(), clock + 1);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("CLOCK ", clock + 1, " to server ",
                                                 server->rank, ": ", s.message()));
    }
  }
  push_wait_ms += absl::ToDoubleMilliseconds(absl::Now() - clock_start);
  const absl::Time now = absl::Now();
  const TransportStats t = data_plane->stats();
  last = IterationStats();
  last.clock = clock;
  last.iteration_ms = absl::ToDoubleMilliseconds(now - iteration_start);
  last.pull_wait_ms = pull_wait_ms;
  last.push_wait_ms = push_wait_ms;
  last.compute_ms = std::max(0.0, last.iteration_ms - pull_wait_ms - push_wait_ms);
  last.bytes_sent = t.bytes_sent - transport_at_start.bytes_sent;
  last.bytes_received = t.bytes_received - transport_at_start.bytes_received;
  last.messages = t.messages_sent + t.messages_received - transport_at_start.messages_sent -
                  transport_at_start.messages_received;
  {
    absl::MutexLock lock(&stats_mu);
    last.dense_bytes = dense_bytes;
    last.push_bytes = push_bytes;
    dense_bytes = push_bytes = 0;
  }
  ++clock;
  session->SetClock(clock);
  Report(info);
  if (std::optional<v1::CompressionPlan> plan = session->TakePlan()) next_plan = *plan;
  if (next_plan && next_plan->effective_clock() <= clock) ApplyPlan(*next_plan);
  while (session->paused() && !session->stop_requested()) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  iteration_start = absl::Now();
  pull_wait_ms = push_wait_ms = 0;
  transport_at_start = t;
  return absl::OkStatus();
}

bool Worker::Impl::ReportDue(uint32_t within) const {
  // The first report comes after one clock: until the coordinator has a
  // bandwidth figure, the adaptive controller can only plan dense.
  const int every = reported ? std::max(1, options.report_every) : 1;
  return window_iterations + within >= static_cast<uint32_t>(every);
}

void Worker::Impl::Report(const IterationInfo& info) {
  window_sum.iteration_ms += last.iteration_ms;
  window_sum.compute_ms += last.compute_ms;
  window_sum.pull_wait_ms += last.pull_wait_ms;
  window_sum.push_wait_ms += last.push_wait_ms;
  window_sum.bytes_sent += last.bytes_sent;
  window_sum.bytes_received += last.bytes_received;
  window_loss += info.loss;
  window_samples += info.samples;
  window_backward_ms += info.backward_ms;
  const bool due = ReportDue();
  ++window_iterations;
  if (!due) return;
  reported = true;
  const double n = window_iterations;
  v1::StatsReport report;
  report.set_role(v1::ROLE_WORKER);
  report.set_rank(session->registration().rank());
  report.set_clock(clock);
  report.set_unix_ms(absl::ToUnixMillis(absl::Now()));
  v1::WorkerStats* w = report.mutable_worker();
  w->set_clock(clock);
  w->set_iteration_ms(window_sum.iteration_ms / n);
  w->set_compute_ms(window_sum.compute_ms / n);
  w->set_pull_wait_ms(window_sum.pull_wait_ms / n);
  w->set_push_wait_ms(window_sum.push_wait_ms / n);
  w->set_backward_ms(window_backward_ms / n);
  w->set_bytes_sent(static_cast<uint64_t>(window_sum.bytes_sent / n));
  w->set_bytes_received(static_cast<uint64_t>(window_sum.bytes_received / n));
  w->set_loss(window_loss / n);
  if (window_sum.iteration_ms > 0) {
    w->set_samples_per_sec(window_samples / (window_sum.iteration_ms / 1000));
  }
  {
    absl::MutexLock lock(&stats_mu);
    uint64_t pushed = 0;
    for (size_t i = 0; i < layer_stats.size(); ++i) {
      const LayerWindowStats& s = layer_stats[i];
      v1::LayerStats* l = report.add_layers();
      l->set_layer(static_cast<uint32_t>(i));
      l->set_gradient_norm(s.gradient_norm);
      l->set_residual_ratio(s.residual_ratio);
      // Per iteration.
      l->set_bytes_pushed(s.pushes > 0 ? s.bytes_pushed / s.pushes : 0);
      l->set_bytes_pulled(static_cast<uint64_t>(s.bytes_pulled / n));
      l->set_encode_ms(s.pushes > 0 ? s.encode_ms / s.pushes : 0);
      l->set_push_ms(s.pushes > 0 ? s.push_ms / s.pushes : 0);
      pushed += s.bytes_pushed;
    }
    // Bytes over the time they were in flight: what the network carried.
    if (push_seconds > 0) w->set_bandwidth_bytes_per_sec(pushed / push_seconds);
    layer_stats.assign(layers.size(), LayerWindowStats());
    push_seconds = 0;
  }
  session->Report(std::move(report));
  window_iterations = 0;
  window_sum = IterationStats();
  window_loss = window_samples = window_backward_ms = 0;
}

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() = default;

absl::StatusOr<std::unique_ptr<Worker>> Worker::Connect(const WorkerOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  absl::Status status = impl->Connect();
  if (!status.ok()) return status;
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

uint32_t Worker::rank() const { return impl_->session->registration().rank(); }
int32_t Worker::staleness() const { return impl_->session->registration().staleness(); }
uint32_t Worker::expected_workers() const {
  return impl_->session->registration().expected_workers();
}
uint32_t Worker::clock() const { return impl_->clock; }

absl::Status Worker::RegisterLayers(const std::vector<LayerDefinition>& layers) {
  return impl_->RegisterLayers(layers);
}

Ticket Worker::Push(uint32_t layer, absl::Span<const float> gradient) {
  return impl_->Push(layer, gradient);
}

Ticket Worker::Pull(uint32_t layer, absl::Span<float> out) { return impl_->Pull(layer, out); }

Ticket Worker::PushDevice(uint32_t layer, const float* gradient, void* stream) {
  return impl_->PushDevice(layer, gradient, stream);
}

Ticket Worker::PullDevice(uint32_t layer, float* out, void* stream) {
  return impl_->PullDevice(layer, out, stream);
}

absl::Status Worker::Wait(const Ticket& ticket) {
  // Pull tickets are what a training loop waits on before Clock.
  return impl_->WaitAccounted(ticket, &impl_->pull_wait_ms);
}

absl::Status Worker::Clock(const IterationInfo& info) { return impl_->Clock(info); }

const IterationStats& Worker::last_iteration() const { return impl_->last; }

bool Worker::stop_requested() const { return impl_->session->stop_requested(); }

std::string Worker::PlanSummary() const {
  std::string out = absl::StrCat("plan ", impl_->plan_version, ":");
  for (size_t i = 0; i < impl_->layers.size(); ++i) {
    const CodecParams& p = impl_->layers[i].params;
    absl::StrAppend(&out, " ", i, ":", CodecName(p.codec));
    if (IsSparse(p.codec)) absl::StrAppend(&out, ":", p.density);
  }
  return out;
}

}  // namespace leeway
