// The server's Prometheus metrics: pushes, bad messages, clocks, chunk
// versions, staleness histograms (overall, per worker, per layer) and the
// transport's counters, rendered for GET /metrics.
#ifndef LEEWAY_SERVER_SERVER_METRICS_H_
#define LEEWAY_SERVER_SERVER_METRICS_H_

#include <string>

#include "core/transport/transport.h"
#include "server/server_core.h"

namespace leeway {

std::string RenderServerMetrics(const ServerCore& core,
                                const TransportStats& transport);

}  // namespace leeway

#endif  // LEEWAY_SERVER_SERVER_METRICS_H_
