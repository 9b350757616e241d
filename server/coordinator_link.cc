#include "server/coordinator_link.h"

#include <grpcpp/grpcpp.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/thread_name.h"

namespace leeway {
namespace {

void ToProto(const HistogramSnapshot& h, v1::Histogram* out) {
  for (double b : h.bounds) out->add_bounds(b);
  for (uint64_t c : h.counts) out->add_counts(c);
  out->set_count(h.count);
  out->set_sum(h.sum);
  out->set_max(h.max);
}

}  // namespace

OptimizerConfig OptimizerFromSpec(const v1::OptimizerSpec& spec,
                                  const OptimizerConfig& defaults) {
  OptimizerConfig c = defaults;
  switch (spec.kind()) {
    case v1::OptimizerSpec::KIND_MOMENTUM: c.kind = OptimizerKind::kMomentum; break;
    case v1::OptimizerSpec::KIND_ADAM: c.kind = OptimizerKind::kAdam; break;
    case v1::OptimizerSpec::KIND_ADAGRAD: c.kind = OptimizerKind::kAdagrad; break;
    case v1::OptimizerSpec::KIND_SGD: c.kind = OptimizerKind::kSgd; break;
    default: break;  // unspecified: the server's default
  }
  if (spec.learning_rate() != 0) c.learning_rate = spec.learning_rate();
  if (spec.momentum() != 0) c.momentum = spec.momentum();
  if (spec.beta1() != 0) c.beta1 = spec.beta1();
  if (spec.beta2() != 0) c.beta2 = spec.beta2();
  if (spec.epsilon() != 0) c.epsilon = spec.epsilon();
  c.nesterov = spec.nesterov();
  c.weight_decay = spec.weight_decay();
  return c;
}

CoordinatorLink::CoordinatorLink(const CoordinatorLinkOptions& options)
    : options_(options), client_(options.coordinator, options.token) {}

CoordinatorLink::~CoordinatorLink() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::unique_ptr<CoordinatorLink>> CoordinatorLink::Register(
    const CoordinatorLinkOptions& options, absl::Time deadline) {
  std::unique_ptr<CoordinatorLink> link(new CoordinatorLink(options));
  absl::Status status = link->RegisterOnce(deadline);
  if (!status.ok()) return status;
  return link;
}

absl::Status CoordinatorLink::RegisterOnce(absl::Time deadline) {
  v1::RegisterRequest request;
  request.set_role(v1::ROLE_SERVER);
  request.set_host(options_.host);
  request.set_data_address(options_.data_address);
  request.set_ucx_worker_address(options_.ucx_worker_address);
  // Once registered, keep the rank across re-registrations.
  if (registration_.incarnation > 0) {
    request.set_requested_rank(registration_.rank);
  } else if (options_.rank.has_value()) {
    request.set_requested_rank(*options_.rank);
  }
  absl::StatusOr<v1::RegisterResponse> registered = client_.RegisterWithRetry(request, deadline);
  if (!registered.ok()) return registered.status();
  const v1::RegisterResponse& response = *registered;
  registration_.job_id = response.job_id();
  registration_.rank = response.rank();
  registration_.incarnation = response.incarnation();
  registration_.staleness = response.staleness();
  registration_.expected_workers = response.expected_workers();
  registration_.heartbeat_interval =
      absl::Milliseconds(std::max<uint32_t>(10, response.heartbeat_interval_ms()));
  LEEWAY_LOG(INFO) << "registered with the coordinator as server " << response.rank()
                   << " (incarnation " << response.incarnation() << ")";
  return absl::OkStatus();
}

void CoordinatorLink::Start(ServerCore* core, Checkpointer* checkpointer) {
  core_ = core;
  checkpointer_ = checkpointer;
  thread_ = std::thread([this] {
    NameThisThread("lw-coord-link");
    Loop();
  });
}

void CoordinatorLink::Loop() {
  for (int beat = 1; !stop_.WaitForNotificationWithTimeout(registration_.heartbeat_interval);
       ++beat) {
    v1::HeartbeatRequest request;
    request.set_role(v1::ROLE_SERVER);
    request.set_rank(registration_.rank);
    request.set_incarnation(registration_.incarnation);
    absl::StatusOr<v1::HeartbeatResponse> reply =
        client_.Heartbeat(request, registration_.heartbeat_interval * 4);
    absl::Status status = reply.status();
    if (status.code() == absl::StatusCode::kNotFound ||
        status.code() == absl::StatusCode::kFailedPrecondition) {
      LEEWAY_LOG(WARNING) << "the coordinator no longer knows this server (" << status
                          << "); registering again";
      status = RegisterOnce(absl::Now());
    }
    if (!status.ok()) {
      LEEWAY_LOG_EVERY_N_SEC(WARNING, 10) << "heartbeat failed: " << status;
      continue;
    }
    if (reply.ok()) Act(*reply);
    if (beat % std::max(1, options_.stats_every) == 0) ReportStats();
  }
}

void CoordinatorLink::SyncShardMap(uint64_t version) {
  absl::StatusOr<v1::ShardMap> fetched = client_.GetShardMap(version);
  if (!fetched.ok()) {
    LEEWAY_LOG_EVERY_N_SEC(WARNING, 10) << "cannot fetch shard map " << version << ": "
                                        << fetched.status();
    return;
  }
  const v1::ShardMap& map = *fetched;
  std::map<uint32_t, const v1::LayerSpec*> layers;
  for (const v1::LayerSpec& l : map.layers()) layers[l.id()] = &l;
  int declared = 0;
  for (const v1::ChunkAssignment& c : map.chunks()) {
    if (c.server_rank() != registration_.rank) continue;
    auto layer = layers.find(c.layer());
    if (layer == layers.end() || c.elements() > UINT32_MAX) {
      LEEWAY_LOG(ERROR) << "shard map " << map.version() << " has a bad chunk for layer "
                        << c.layer();
      continue;
    }
    absl::Status added = core_->AddChunk(
        ChunkInfo{c.layer(), c.chunk(), c.offset_elements(), static_cast<uint32_t>(c.elements())},
        OptimizerFromSpec(layer->second->optimizer(), options_.default_optimizer));
    if (!added.ok()) {
      LEEWAY_LOG(ERROR) << "cannot declare layer " << c.layer() << " chunk " << c.chunk()
                        << ": " << added;
      continue;
    }
    ++declared;
  }
  shard_map_version_ = map.version();
  LEEWAY_LOG(INFO) << "shard map " << map.version() << ": " << declared
                   << " chunks on this server";
}

void CoordinatorLink::Act(const v1::HeartbeatResponse& reply) {
  if (reply.shard_map_version() > shard_map_version_) SyncShardMap(reply.shard_map_version());
  for (uint32_t rank : reply.dead_workers()) {
    if (dead_.insert(rank).second) {
      LEEWAY_LOG(WARNING) << "the coordinator declared worker " << rank
                          << " dead: it leaves the clock set";
      core_->Leave(rank);
    }
  }
  // A worker no longer listed as dead has rejoined (it says Join itself).
  std::set<uint32_t> listed(reply.dead_workers().begin(), reply.dead_workers().end());
  for (auto it = dead_.begin(); it != dead_.end();) {
    it = listed.count(*it) ? std::next(it) : dead_.erase(it);
  }
  if (reply.checkpoint_request_id() > checkpoint_request_) {
    checkpoint_request_ = reply.checkpoint_request_id();
    if (checkpointer_ == nullptr) {
      LEEWAY_LOG(WARNING) << "checkpoint requested, but this server has no --checkpoint_dir";
      return;
    }
    absl::StatusOr<uint64_t> seq = checkpointer_->WriteNow();
    if (!seq.ok()) {
      LEEWAY_LOG(ERROR) << "requested checkpoint failed: " << seq.status();
    }
  }
}

void CoordinatorLink::ReportStats() {
  v1::StatsReport report;
  report.set_role(v1::ROLE_SERVER);
  report.set_rank(registration_.rank);
  report.set_unix_ms(absl::ToUnixMillis(absl::Now()));
  v1::ServerStats* s = report.mutable_server();
  ToProto(core_->Staleness(), s->mutable_staleness());
  for (const auto& [worker, h] : core_->StalenessByWorker()) {
    ToProto(h, &(*s->mutable_staleness_by_worker())[worker]);
  }
  for (const auto& [layer, h] : core_->StalenessByLayer()) {
    ToProto(h, &(*s->mutable_staleness_by_layer())[layer]);
  }
  s->set_bad_messages(core_->bad_messages());
  absl::Status status = client_.ReportStats(report).status();
  if (!status.ok()) {
    LEEWAY_LOG_EVERY_N_SEC(WARNING, 30) << "stats report failed: " << status;
  }
}

}  // namespace leeway
