#include "coordinator/coordinator_state.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "coordinator/shard_map.h"
#include "core/common/logging.h"

namespace leeway {
namespace {

absl::StatusOr<MemberRole> RoleOf(v1::Role role) {
  switch (role) {
    case v1::ROLE_WORKER: return MemberRole::kWorker;
    case v1::ROLE_SERVER: return MemberRole::kServer;
    default: return absl::InvalidArgumentError("role must be worker or server");
  }
}

v1::Member ToProto(const MemberInfo& m) {
  v1::Member out;
  out.set_role(m.role == MemberRole::kWorker ? v1::ROLE_WORKER : v1::ROLE_SERVER);
  out.set_rank(m.rank);
  out.set_host(m.host);
  out.set_data_address(m.data_address);
  out.set_ucx_worker_address(m.ucx_worker_address);
  out.set_health(m.health == MemberHealth::kAlive  ? v1::HEALTH_ALIVE
                 : m.health == MemberHealth::kDead ? v1::HEALTH_DEAD
                                                   : v1::HEALTH_DOWN);
  out.set_clock(m.clock);
  out.set_last_heartbeat_unix_ms(absl::ToUnixMillis(m.last_heartbeat));
  out.mutable_capabilities()->set_gpu(m.gpu);
  out.set_incarnation(m.incarnation);
  return out;
}

// p-quantile of a histogram: the upper bound of the bucket holding it.
double Quantile(const v1::Histogram& h, double p) {
  uint64_t total = 0;
  for (uint64_t c : h.counts()) total += c;
  if (total == 0) return 0;
  const double want = p * total;
  uint64_t seen = 0;
  for (int i = 0; i < h.counts_size(); ++i) {
    seen += h.counts(i);
    if (seen >= want) return i < h.bounds_size() ? h.bounds(i) : h.max();
  }
  return h.max();
}

v1::StalenessSummary Summary(const v1::Histogram& h) {
  v1::StalenessSummary s;
  s.set_p50(Quantile(h, 0.5));
  s.set_p99(Quantile(h, 0.99));
  s.set_max(h.max());
  s.set_count(h.count());
  return s;
}

// Adds b's counts into a (same bounds).
void Merge(v1::Histogram* a, const v1::Histogram& b) {
  if (a->bounds_size() == 0) {
    *a = b;
    return;
  }
  for (int i = 0; i < std::min(a->counts_size(), b.counts_size()); ++i) {
    a->set_counts(i, a->counts(i) + b.counts(i));
  }
  a->set_count(a->count() + b.count());
  a->set_sum(a->sum() + b.sum());
  a->set_max(std::max(a->max(), b.max()));
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

CoordinatorState::CoordinatorState(const CoordinatorConfig& config,
                                   const ControllerPolicy& policy, absl::Time start)
    : config_(config), start_(start), members_(config.heartbeat_timeout), policy_(policy) {
  plan_.set_policy(PolicyName(policy));
}

absl::StatusOr<v1::RegisterResponse> CoordinatorState::Register(
    const v1::RegisterRequest& request, absl::Time now) {
  absl::StatusOr<MemberRole> role = RoleOf(request.role());
  if (!role.ok()) return role.status();
  Registration r;
  r.role = *role;
  r.host = request.host();
  r.data_address = request.data_address();
  r.ucx_worker_address = request.ucx_worker_address();
  r.gpu = request.capabilities().gpu();
  if (request.has_requested_rank()) r.requested_rank = request.requested_rank();
  absl::StatusOr<MemberInfo> member = members_.Register(r, now);
  if (!member.ok()) return member.status();
  absl::MutexLock lock(&mu_);
  v1::RegisterResponse response;
  response.set_job_id(config_.job_id);
  response.set_rank(member->rank);
  response.set_incarnation(member->incarnation);
  response.set_heartbeat_interval_ms(absl::ToInt64Milliseconds(config_.heartbeat_interval));
  response.set_heartbeat_timeout_ms(absl::ToInt64Milliseconds(config_.heartbeat_timeout));
  response.set_staleness(config_.staleness);
  response.set_start_clock(*role == MemberRole::kWorker ? MinWorkerClock() : 0);
  response.set_expected_workers(config_.expected_workers);
  response.set_expected_servers(config_.expected_servers);
  LEEWAY_LOG(INFO) << MemberRoleName(*role) << " " << member->rank << " registered from "
                   << request.host() << " (incarnation " << member->incarnation << ")";
  return response;
}

absl::StatusOr<v1::HeartbeatResponse> CoordinatorState::Heartbeat(
    const v1::HeartbeatRequest& request, absl::Time now) {
  absl::StatusOr<MemberRole> role = RoleOf(request.role());
  if (!role.ok()) return role.status();
  absl::Status beat = members_.Heartbeat(*role, request.rank(), request.incarnation(),
                                         request.clock(), now);
  if (!beat.ok()) return beat;
  absl::MutexLock lock(&mu_);
  v1::HeartbeatResponse response;
  response.set_shard_map_version(shard_map_.version());
  response.set_plan_version(plan_.version());
  for (uint32_t r : members_.Ranks(MemberRole::kWorker, MemberHealth::kDead)) {
    response.add_dead_workers(r);
  }
  for (uint32_t r : members_.Ranks(MemberRole::kServer, MemberHealth::kDown)) {
    response.add_down_servers(r);
  }
  response.set_paused(paused_);
  response.set_checkpoint_request_id(checkpoint_request_);
  if (*role == MemberRole::kWorker && plan_.version() > 0 &&
      MinWorkerClock() >= plan_clock_ + config_.plan_window) {
    Replan("window");
  }
  return response;
}

absl::StatusOr<v1::ShardMap> CoordinatorState::RegisterLayers(
    const v1::RegisterLayersRequest& request) {
  if (request.layers_size() == 0) return absl::InvalidArgumentError("no layers declared");
  absl::MutexLock lock(&mu_);
  if (shard_map_.version() > 0) {
    // Later declarations must match the map's layers.
    bool same = request.layers_size() == shard_map_.layers_size();
    for (int i = 0; same && i < request.layers_size(); ++i) {
      same = request.layers(i).id() == shard_map_.layers(i).id() &&
             request.layers(i).elements() == shard_map_.layers(i).elements();
    }
    if (!same) {
      return absl::FailedPreconditionError(
          "these layers differ from the ones the shard map was built from");
    }
    return shard_map_;
  }
  const std::vector<uint32_t> servers =
      members_.Ranks(MemberRole::kServer, MemberHealth::kAlive);
  if (servers.size() < config_.expected_servers) {
    return absl::UnavailableError(absl::StrCat(servers.size(), " of ",
                                               config_.expected_servers,
                                               " servers registered; retry"));
  }
  std::vector<LayerShape> shapes;
  for (const v1::LayerSpec& l : request.layers()) {
    shapes.push_back({l.id(), l.name(), l.elements(), 4});
  }
  absl::StatusOr<std::vector<ChunkPlacement>> map =
      BuildShardMap(shapes, static_cast<uint32_t>(servers.size()), config_.chunk_bytes);
  if (!map.ok()) return map.status();
  v1::ShardMap out;
  out.set_version(1);
  out.set_chunk_bytes(config_.chunk_bytes);
  *out.mutable_layers() = request.layers();
  for (const ChunkPlacement& c : *map) {
    v1::ChunkAssignment* a = out.add_chunks();
    a->set_layer(c.layer);
    a->set_chunk(c.chunk);
    a->set_offset_elements(c.offset);
    a->set_elements(c.elements);
    a->set_server_rank(servers[c.server]);
  }
  for (const MemberInfo& m : members_.Members()) {
    if (m.role == MemberRole::kServer && m.health == MemberHealth::kAlive) {
      *out.add_servers() = ToProto(m);
    }
  }
  shard_map_ = out;
  LEEWAY_LOG(INFO) << "shard map 1: " << shapes.size() << " layers, " << map->size()
                   << " chunks on " << servers.size() << " servers";
  Replan("layers registered");
  return shard_map_;
}

absl::StatusOr<v1::ShardMap> CoordinatorState::GetShardMap(uint64_t min_version) const {
  absl::MutexLock lock(&mu_);
  if (shard_map_.version() == 0 || shard_map_.version() < min_version) {
    return absl::UnavailableError("no shard map of that version yet");
  }
  return shard_map_;
}

v1::GetMembersResponse CoordinatorState::GetMembers() const {
  v1::GetMembersResponse out;
  for (const MemberInfo& m : members_.Members()) *out.add_members() = ToProto(m);
  return out;
}

absl::StatusOr<v1::ReportStatsResponse> CoordinatorState::ReportStats(
    const v1::StatsReport& report) {
  absl::StatusOr<MemberRole> role = RoleOf(report.role());
  if (!role.ok()) return role.status();
  absl::MutexLock lock(&mu_);
  if (*role == MemberRole::kServer) {
    server_stats_[report.rank()] = report.server();
  } else {
    RecordWorkerReport(report);
  }
  v1::ReportStatsResponse response;
  response.set_plan_version(plan_.version());
  return response;
}

void CoordinatorState::RecordWorkerReport(const v1::StatsReport& report) {
  worker_stats_[report.rank()] = report.worker();
  for (const v1::LayerStats& l : report.layers()) {
    LayerWindow& w = layer_stats_[l.layer()];
    if (!w.seen) w.norm_start = l.gradient_norm();
    w.seen = true;
    w.norm_end = l.gradient_norm();
    w.latest = l;
  }
  if (plan_unmeasured_ && AllWorkersMeasured()) Replan("first measurements");
}

bool CoordinatorState::AllWorkersMeasured() const {
  const std::vector<uint32_t> live = members_.Ranks(MemberRole::kWorker, MemberHealth::kAlive);
  if (live.empty()) return false;
  for (uint32_t rank : live) {
    auto it = worker_stats_.find(rank);
    if (it == worker_stats_.end() || it->second.bandwidth_bytes_per_sec() <= 0) return false;
  }
  return true;
}

v1::CompressionPlan CoordinatorState::GetPlan() const {
  absl::MutexLock lock(&mu_);
  return plan_;
}

std::vector<MemberInfo> CoordinatorState::Sweep(absl::Time now) {
  std::vector<MemberInfo> gone = members_.Sweep(now);
  for (const MemberInfo& m : gone) {
    LEEWAY_LOG(WARNING) << MemberRoleName(m.role) << " " << m.rank << " declared "
                        << MemberHealthName(m.health) << " (silent for more than "
                        << members_.heartbeat_timeout() << ")";
  }
  return gone;
}

uint32_t CoordinatorState::MinWorkerClock() const {
  uint32_t min = UINT32_MAX;
  for (const MemberInfo& m : members_.Members()) {
    if (m.role == MemberRole::kWorker && m.health == MemberHealth::kAlive) {
      min = std::min(min, m.clock);
    }
  }
  return min == UINT32_MAX ? 0 : min;
}

uint32_t CoordinatorState::MaxWorkerClock() const {
  uint32_t max = 0;
  for (const MemberInfo& m : members_.Members()) {
    if (m.role == MemberRole::kWorker) max = std::max(max, m.clock);
  }
  return max;
}

void CoordinatorState::Replan(const char* why) {
  if (shard_map_.version() == 0) return;
  std::vector<LayerInput> layers;
  for (const v1::LayerSpec& spec : shard_map_.layers()) {
    LayerInput in;
    in.layer = spec.id();
    in.elements = spec.elements();
    auto it = layer_stats_.find(spec.id());
    if (it != layer_stats_.end()) {
      in.gradient_norm = it->second.norm_end;
      in.gradient_norm_start = it->second.norm_start;
      in.residual_ratio = it->second.latest.residual_ratio();
    }
    for (const v1::LayerPlan& p : plan_.layers()) {
      if (p.layer() == spec.id() && p.codec() != v1::CODEC_NONE) in.current_density = p.density();
    }
    layers.push_back(in);
  }
  JobInput job;
  job.clock = MinWorkerClock();
  job.workers = static_cast<uint32_t>(std::max<size_t>(1, members_.LiveCount(MemberRole::kWorker)));
  std::vector<double> bandwidth, backward;
  for (const auto& [rank, w] : worker_stats_) {
    if (w.bandwidth_bytes_per_sec() > 0) bandwidth.push_back(w.bandwidth_bytes_per_sec());
    if (w.backward_ms() > 0) backward.push_back(w.backward_ms() / 1000.0);
  }
  job.bandwidth_bytes_per_sec = Median(bandwidth);
  job.overlap_seconds = Median(backward);
  // No bandwidth measured yet: nothing to budget with, so dense.
  const bool unmeasured =
      bandwidth.empty() && policy_.kind == ControllerPolicy::Kind::kAdaptive;
  const ControllerPolicy policy =
      unmeasured ? ControllerPolicy{ControllerPolicy::Kind::kNone} : policy_;
  const ControllerPlan decided = DecidePlan(policy, config_.controller, job, layers);
  v1::CompressionPlan plan;
  plan.set_version(plan_.version() + 1);
  // Later plans switch every worker at the same clock, after the fastest.
  // The first (made when the layers are registered) applies from the start,
  // and so does the one that replaces a plan that was dense only because
  // nothing was measured yet: each worker takes it at its next clock, since
  // waiting for the fastest worker's next clock left a dense clock in every
  // worker whenever the fastest was a clock ahead when the last measurement
  // came (13x compression in place of 214x in the ResNet-50 study).
  plan.set_effective_clock(plan_.version() == 0 || plan_unmeasured_ ? 0
                                                                    : MaxWorkerClock() + 1);
  plan.set_policy(PolicyName(policy_));
  plan.set_budget_bytes_per_iteration(decided.budget_bytes);
  for (const LayerDecision& d : decided.layers) {
    v1::LayerPlan* p = plan.add_layers();
    p->set_layer(d.layer);
    p->set_codec(static_cast<v1::Codec>(d.codec));
    p->set_density(d.density);
    p->set_value_codec(static_cast<v1::Codec>(d.value_codec));
    p->set_reason(unmeasured ? "no bandwidth measured yet: dense" : d.reason);
    LEEWAY_LOG(INFO) << "plan " << plan.version() << " (" << why << ") layer " << d.layer
                     << ": " << p->reason();
  }
  plan_ = plan;
  plan_clock_ = job.clock;
  plan_unmeasured_ = unmeasured;
  for (auto& [id, w] : layer_stats_) {  // a new window
    w.norm_start = w.norm_end;
  }
}

v1::ClusterStatus CoordinatorState::ClusterStatus(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  v1::ClusterStatus s;
  s.set_job_id(config_.job_id);
  for (const MemberInfo& m : members_.Members()) *s.add_members() = ToProto(m);
  s.set_min_clock(MinWorkerClock());
  s.set_max_clock(MaxWorkerClock());
  s.set_staleness_bound(config_.staleness);
  s.set_paused(paused_);
  s.set_shard_map_version(shard_map_.version());
  s.set_plan_version(plan_.version());
  s.set_uptime_ms(absl::ToInt64Milliseconds(now - start_));
  return s;
}

v1::StalenessReport CoordinatorState::Staleness() const {
  absl::MutexLock lock(&mu_);
  v1::StalenessReport r;
  r.set_bound(config_.staleness);
  v1::Histogram overall;
  std::map<uint32_t, v1::Histogram> by_worker, by_layer;
  for (const auto& [rank, s] : server_stats_) {
    Merge(&overall, s.staleness());
    for (const auto& [w, h] : s.staleness_by_worker()) Merge(&by_worker[w], h);
    for (const auto& [l, h] : s.staleness_by_layer()) Merge(&by_layer[l], h);
  }
  *r.mutable_overall() = Summary(overall);
  for (const MemberInfo& m : members_.Members()) {
    if (m.role != MemberRole::kWorker) continue;
    v1::WorkerStaleness* w = r.add_workers();
    w->set_rank(m.rank);
    w->set_clock(m.clock);
    w->set_health(ToProto(m).health());
    *w->mutable_staleness() = Summary(by_worker[m.rank]);
  }
  for (const auto& [layer, h] : by_layer) {
    v1::LayerStaleness* l = r.add_layers();
    l->set_layer(layer);
    for (const v1::LayerSpec& spec : shard_map_.layers()) {
      if (spec.id() == layer) l->set_name(spec.name());
    }
    *l->mutable_staleness() = Summary(h);
  }
  return r;
}

v1::ThroughputReport CoordinatorState::Throughput() const {
  absl::MutexLock lock(&mu_);
  v1::ThroughputReport r;
  double comm = 0, iteration = 0, bytes = 0;
  for (const auto& [rank, w] : worker_stats_) {
    r.set_samples_per_sec(r.samples_per_sec() + w.samples_per_sec());
    const double seconds = w.iteration_ms() > 0 ? w.iteration_ms() / 1000.0 : 0;
    const double per_iteration = w.bytes_sent() + w.bytes_received();
    if (seconds > 0) bytes += per_iteration / seconds;
    comm += w.push_wait_ms() + w.pull_wait_ms();
    iteration += w.iteration_ms();
    v1::RoleThroughput* m = r.add_members();
    m->set_role(v1::ROLE_WORKER);
    m->set_rank(rank);
    m->set_samples_per_sec(w.samples_per_sec());
    if (seconds > 0) {
      m->set_bytes_sent_per_sec(w.bytes_sent() / seconds);
      m->set_bytes_received_per_sec(w.bytes_received() / seconds);
    }
    if (w.iteration_ms() > 0) m->set_comm_share((w.push_wait_ms() + w.pull_wait_ms()) / w.iteration_ms());
  }
  for (const auto& [rank, s] : server_stats_) {
    v1::RoleThroughput* m = r.add_members();
    m->set_role(v1::ROLE_SERVER);
    m->set_rank(rank);
    m->set_bytes_sent_per_sec(s.bytes_out_per_sec());
    m->set_bytes_received_per_sec(s.bytes_in_per_sec());
  }
  r.set_bytes_per_sec(bytes);
  if (iteration > 0) r.set_comm_share(comm / iteration);
  double per_iteration = 0;
  for (const auto& [rank, w] : worker_stats_) per_iteration += w.bytes_sent() + w.bytes_received();
  if (!worker_stats_.empty()) r.set_bytes_per_iteration(per_iteration / worker_stats_.size());
  // Dense fp32 bytes of every layer over what its pushes carried.
  double dense = 0, pushed = 0;
  for (const v1::LayerSpec& spec : shard_map_.layers()) {
    auto it = layer_stats_.find(spec.id());
    if (it == layer_stats_.end() || it->second.latest.bytes_pushed() == 0) continue;
    dense += 4.0 * spec.elements();
    pushed += it->second.latest.bytes_pushed();
  }
  if (pushed > 0) r.set_compression_ratio(dense / pushed);
  return r;
}

v1::LayerStatsReport CoordinatorState::LayerStats() const {
  absl::MutexLock lock(&mu_);
  v1::LayerStatsReport r;
  r.set_plan_version(plan_.version());
  r.set_policy(plan_.policy());
  for (const v1::LayerSpec& spec : shard_map_.layers()) {
    v1::LayerReport* l = r.add_layers();
    *l->mutable_layer() = spec;
    auto it = layer_stats_.find(spec.id());
    if (it != layer_stats_.end()) *l->mutable_stats() = it->second.latest;
    for (const v1::LayerPlan& p : plan_.layers()) {
      if (p.layer() == spec.id()) *l->mutable_plan() = p;
    }
  }
  return r;
}

absl::StatusOr<v1::CompressionPlan> CoordinatorState::SetPolicy(const std::string& text) {
  absl::StatusOr<ControllerPolicy> policy = ParsePolicy(text);
  if (!policy.ok()) return policy.status();
  absl::MutexLock lock(&mu_);
  policy_ = *policy;
  plan_.set_policy(PolicyName(policy_));
  Replan("policy set");
  return plan_;
}

bool CoordinatorState::SetPaused(bool paused) {
  absl::MutexLock lock(&mu_);
  paused_ = paused;
  return paused_;
}

uint64_t CoordinatorState::RequestCheckpoint() {
  absl::MutexLock lock(&mu_);
  return ++checkpoint_request_;
}

}  // namespace leeway
