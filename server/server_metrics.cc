#include "server/server_metrics.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "core/common/prometheus_text.h"

namespace leeway {

std::string RenderServerMetrics(const ServerCore& core,
                                const TransportStats& transport) {
  PrometheusText p;
  p.Counter("leeway_server_pushes_applied_total", "Pushes applied.",
            double(core.pushes_applied()));
  p.Counter("leeway_server_bad_messages_total",
            "Messages refused (bad stamps, payloads, unknown chunks).",
            double(core.bad_messages()));
  const uint32_t min_clock = core.tracker().MinClock();
  if (min_clock != std::numeric_limits<uint32_t>::max()) {
    p.Gauge("leeway_server_min_clock", "Smallest clock among live workers.", min_clock);
  }
  p.Gauge("leeway_server_max_clock", "Largest clock a live worker announced.",
          core.tracker().MaxClock());
  p.Gauge("leeway_server_parked_pulls", "Pulls waiting for slower workers.",
          double(core.tracker().parked()));
  for (Chunk* chunk : core.Chunks()) {
    p.Gauge("leeway_server_chunk_version", "Push batches applied to a chunk.",
            double(chunk->version()),
            {{"layer", absl::StrCat(chunk->info().layer)},
             {"chunk", absl::StrCat(chunk->info().chunk)}});
  }
  const HistogramSnapshot all = core.Staleness();
  p.Histogram("leeway_server_staleness", "Staleness of applied pushes, in clocks.",
              all.bounds, all.counts, all.sum);
  for (const auto& [worker, h] : core.StalenessByWorker()) {
    p.Histogram("leeway_server_staleness_by_worker",
                "Staleness of applied pushes per worker.", h.bounds, h.counts,
                h.sum, {{"worker", absl::StrCat(worker)}});
  }
  for (const auto& [layer, h] : core.StalenessByLayer()) {
    p.Histogram("leeway_server_staleness_by_layer",
                "Staleness of applied pushes per layer.", h.bounds, h.counts,
                h.sum, {{"layer", absl::StrCat(layer)}});
  }
  p.Counter("leeway_transport_messages_received_total", "Data-plane messages in.",
            double(transport.messages_received));
  p.Counter("leeway_transport_messages_sent_total", "Data-plane messages out.",
            double(transport.messages_sent));
  p.Counter("leeway_transport_bytes_received_total", "Data-plane bytes in.",
            double(transport.bytes_received));
  p.Counter("leeway_transport_bytes_sent_total", "Data-plane bytes out.",
            double(transport.bytes_sent));
  p.Counter("leeway_transport_bad_messages_total", "Frames that failed validation.",
            double(transport.bad_messages));
  p.Counter("leeway_transport_handshake_failures_total", "Failed HELLO handshakes.",
            double(transport.handshake_failures));
  p.Counter("leeway_transport_peers_lost_total", "Peers lost.",
            double(transport.peers_lost));
  p.Counter("leeway_transport_stalls_total",
            "Times UCX said events were pending that never came: a shared-memory "
            "FIFO stopped by a peer that died inside a send (restart the server).",
            double(transport.stalls));
  return p.text();
}

}  // namespace leeway
