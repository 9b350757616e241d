// The coordinator's Prometheus metrics: members by role and health, worker
// clocks, shard map and plan versions, planned bytes per iteration.
#ifndef LEEWAY_COORDINATOR_COORDINATOR_METRICS_H_
#define LEEWAY_COORDINATOR_COORDINATOR_METRICS_H_

#include <string>

#include "absl/time/time.h"
#include "coordinator/coordinator_state.h"

namespace leeway {

std::string RenderCoordinatorMetrics(const CoordinatorState& state, absl::Time now);

}  // namespace leeway

#endif  // LEEWAY_COORDINATOR_COORDINATOR_METRICS_H_
