#include "worker/control_session.h"

#include <algorithm>

#include "core/common/logging.h"
#include "core/common/thread_name.h"

namespace leeway {
namespace {

constexpr size_t kMaxQueuedReports = 16;

}  // namespace

ControlSession::ControlSession(const ControlSessionOptions& options)
    : options_(options), client_(options.coordinator, options.token) {}

ControlSession::~ControlSession() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::unique_ptr<ControlSession>> ControlSession::Register(
    const ControlSessionOptions& options, absl::Time deadline) {
  std::unique_ptr<ControlSession> session(new ControlSession(options));
  absl::Status status = session->RegisterOnce(deadline);
  if (!status.ok()) return status;
  return session;
}

absl::Status ControlSession::RegisterOnce(absl::Time deadline) {
  v1::RegisterRequest request;
  request.set_role(v1::ROLE_WORKER);
  request.set_host(options_.host);
  request.set_ucx_worker_address(options_.ucx_worker_address);
  request.mutable_capabilities()->set_gpu(options_.gpu);
  request.mutable_capabilities()->set_cpu_cores(std::thread::hardware_concurrency());
  if (registration_.incarnation() > 0) {
    request.set_requested_rank(registration_.rank());
  } else if (options_.rank.has_value()) {
    request.set_requested_rank(*options_.rank);
  }
  absl::StatusOr<v1::RegisterResponse> response = client_.RegisterWithRetry(request, deadline);
  if (!response.ok()) return response.status();
  registration_ = *response;
  LEEWAY_LOG(INFO) << "registered with the coordinator as worker " << registration_.rank()
                   << " (incarnation " << registration_.incarnation() << ", staleness "
                   << registration_.staleness() << ")";
  return absl::OkStatus();
}

void ControlSession::Start() {
  thread_ = std::thread([this] {
    NameThisThread("lw-control");
    Loop();
  });
}

void ControlSession::SetClock(uint32_t clock) {
  absl::MutexLock lock(&mu_);
  clock_ = clock;
}

void ControlSession::Report(v1::StatsReport report) {
  absl::MutexLock lock(&mu_);
  reports_.push_back(std::move(report));
  while (reports_.size() > kMaxQueuedReports) reports_.pop_front();
}

std::optional<v1::CompressionPlan> ControlSession::TakePlan() {
  absl::MutexLock lock(&mu_);
  std::optional<v1::CompressionPlan> plan = std::move(plan_);
  plan_.reset();
  return plan;
}

bool ControlSession::paused() const {
  absl::MutexLock lock(&mu_);
  return paused_;
}

bool ControlSession::stop_requested() const {
  absl::MutexLock lock(&mu_);
  return stop_requested_;
}

std::set<uint32_t> ControlSession::down_servers() const {
  absl::MutexLock lock(&mu_);
  return down_servers_;
}

void ControlSession::Loop() {
  const absl::Duration interval =
      absl::Milliseconds(std::max<uint32_t>(10, registration_.heartbeat_interval_ms()));
  absl::Duration wait = interval;
  absl::Time next_beat = absl::Now() + wait;
  while (true) {
    {
      // Until the next heartbeat, or a report to send, or the end.
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithDeadline(
          absl::Condition(
              +[](ControlSession* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
                return s->stopping_ || (!s->reports_blocked_ && !s->reports_.empty());
              },
              this),
          next_beat);
      if (stopping_) return;
    }
    SendReports();
    if (absl::Now() < next_beat) continue;
    v1::HeartbeatRequest request;
    request.set_role(v1::ROLE_WORKER);
    request.set_rank(registration_.rank());
    request.set_incarnation(registration_.incarnation());
    {
      absl::MutexLock lock(&mu_);
      request.set_clock(clock_);
      request.set_plan_version(plan_version_);
    }
    absl::StatusOr<v1::HeartbeatResponse> reply = client_.Heartbeat(request, interval * 4);
    absl::Status status = reply.status();
    if (status.code() == absl::StatusCode::kNotFound ||
        status.code() == absl::StatusCode::kFailedPrecondition) {
      LEEWAY_LOG(WARNING) << "the coordinator no longer knows this worker (" << status
                          << "); registering again";
      status = RegisterOnce(absl::Now());
    }
    if (!status.ok()) {
      // Back off up to 8 intervals while the coordinator is away.
      wait = std::min(wait * 2, interval * 8);
      next_beat = absl::Now() + wait;
      LEEWAY_LOG_EVERY_N_SEC(WARNING, 10) << "heartbeat failed: " << status
                                          << "; retrying in " << wait;
      continue;
    }
    wait = interval;
    next_beat = absl::Now() + wait;
    {
      absl::MutexLock lock(&mu_);
      reports_blocked_ = false;
    }
    if (reply.ok()) Act(*reply);
    SendReports();
  }
}

void ControlSession::Act(const v1::HeartbeatResponse& reply) {
  {
    absl::MutexLock lock(&mu_);
    paused_ = reply.paused();
    if (reply.stop() && !stop_requested_) {
      LEEWAY_LOG(WARNING) << "the coordinator asks this worker to stop";
    }
    stop_requested_ = stop_requested_ || reply.stop();
    down_servers_ = {reply.down_servers().begin(), reply.down_servers().end()};
  }
  FetchPlanIfNewer(reply.plan_version());
}

void ControlSession::FetchPlanIfNewer(uint64_t announced) {
  uint64_t known;
  {
    absl::MutexLock lock(&mu_);
    known = plan_version_;
  }
  if (announced <= known) return;
  absl::StatusOr<v1::CompressionPlan> plan = client_.GetPlan(known);
  if (!plan.ok()) {
    LEEWAY_LOG_EVERY_N_SEC(WARNING, 10) << "cannot fetch plan " << announced << ": "
                                        << plan.status();
    return;
  }
  absl::MutexLock lock(&mu_);
  if (plan->version() <= plan_version_) return;
  plan_version_ = plan->version();
  plan_ = *std::move(plan);
}

void ControlSession::SendReports() {
  while (true) {
    v1::StatsReport report;
    {
      absl::MutexLock lock(&mu_);
      if (reports_.empty() || reports_blocked_) return;
      report = std::move(reports_.front());
      reports_.pop_front();
    }
    absl::StatusOr<v1::ReportStatsResponse> sent = client_.ReportStats(report);
    if (!sent.ok()) {
      LEEWAY_LOG_EVERY_N_SEC(WARNING, 30) << "stats report failed: " << sent.status();
      absl::MutexLock lock(&mu_);
      reports_blocked_ = true;
      return;
    }
    FetchPlanIfNewer(sent->plan_version());
  }
}

}  // namespace leeway
