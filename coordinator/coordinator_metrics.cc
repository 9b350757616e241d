#include "coordinator/coordinator_metrics.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "core/common/prometheus_text.h"

namespace leeway {

std::string RenderCoordinatorMetrics(const CoordinatorState& state, absl::Time now) {
  const v1::ClusterStatus status = state.ClusterStatus(now);
  const v1::CompressionPlan plan = state.GetPlan();
  PrometheusText p;
  std::map<std::pair<std::string, std::string>, int> members;
  for (const v1::Member& m : status.members()) {
    ++members[{v1::Role_Name(m.role()), v1::Health_Name(m.health())}];
  }
  for (const auto& [key, count] : members) {
    p.Gauge("leeway_coordinator_members", "Members by role and health.", count,
            {{"role", key.first}, {"health", key.second}});
  }
  for (const v1::Member& m : status.members()) {
    if (m.role() != v1::ROLE_WORKER) continue;
    p.Gauge("leeway_coordinator_worker_clock", "Each worker's clock.", m.clock(),
            {{"rank", absl::StrCat(m.rank())}});
  }
  p.Gauge("leeway_coordinator_min_clock", "Slowest live worker's clock.", status.min_clock());
  p.Gauge("leeway_coordinator_max_clock", "Fastest worker's clock.", status.max_clock());
  p.Gauge("leeway_coordinator_shard_map_version", "Shard map version.",
          double(status.shard_map_version()));
  p.Gauge("leeway_coordinator_plan_version", "Compression plan version.",
          double(plan.version()));
  p.Gauge("leeway_coordinator_budget_bytes", "Bytes a worker may move per iteration.",
          double(plan.budget_bytes_per_iteration()));
  p.Gauge("leeway_coordinator_paused", "1 while the job is paused.", status.paused() ? 1 : 0);
  p.Counter("leeway_coordinator_uptime_seconds_total", "Seconds since start.",
            status.uptime_ms() / 1000.0);
  return p.text();
}

}  // namespace leeway
