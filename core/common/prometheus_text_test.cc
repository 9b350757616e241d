#include "core/common/prometheus_text.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("Prometheus text has one HELP and TYPE per family") {
  PrometheusText p;
  p.Counter("leeway_pushes_total", "Pushes applied.", 3, {{"layer", "1"}});
  p.Counter("leeway_pushes_total", "Pushes applied.", 4, {{"layer", "2"}});
  p.Gauge("leeway_min_clock", "Smallest clock.", 7);
  CHECK(p.text() ==
        "# HELP leeway_pushes_total Pushes applied.\n"
        "# TYPE leeway_pushes_total counter\n"
        "leeway_pushes_total{layer=\"1\"} 3\n"
        "leeway_pushes_total{layer=\"2\"} 4\n"
        "# HELP leeway_min_clock Smallest clock.\n"
        "# TYPE leeway_min_clock gauge\n"
        "leeway_min_clock 7\n");
}

TEST_CASE("histograms are cumulative and end with +Inf") {
  PrometheusText p;
  p.Histogram("h", "A histogram.", {0, 1, 2}, {1, 0, 2, 5}, 30.5, {{"w", "a\"b"}});
  CHECK(p.text() ==
        "# HELP h A histogram.\n"
        "# TYPE h histogram\n"
        "h_bucket{w=\"a\\\"b\",le=\"0\"} 1\n"
        "h_bucket{w=\"a\\\"b\",le=\"1\"} 1\n"
        "h_bucket{w=\"a\\\"b\",le=\"2\"} 3\n"
        "h_bucket{w=\"a\\\"b\",le=\"+Inf\"} 8\n"
        "h_sum{w=\"a\\\"b\"} 30.5\n"
        "h_count{w=\"a\\\"b\"} 8\n");
}

}  // namespace
}  // namespace leeway
