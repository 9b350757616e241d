// Builds Prometheus text exposition format (version 0.0.4): counters,
// gauges and histograms with labels, each family with its HELP and TYPE
// lines once. Label values are escaped. Not thread-safe (one per scrape).
#ifndef LEEWAY_CORE_COMMON_PROMETHEUS_TEXT_H_
#define LEEWAY_CORE_COMMON_PROMETHEUS_TEXT_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace leeway {

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  void Counter(const std::string& name, const std::string& help, double value,
               const Labels& labels = {});
  void Gauge(const std::string& name, const std::string& help, double value,
             const Labels& labels = {});
  // `counts` has one entry per bound plus the overflow (+Inf) bucket;
  // buckets are written cumulatively, as Prometheus wants.
  void Histogram(const std::string& name, const std::string& help,
                 const std::vector<double>& bounds,
                 const std::vector<uint64_t>& counts, double sum,
                 const Labels& labels = {});

  const std::string& text() const { return text_; }

 private:
  void Family(const std::string& name, const std::string& help,
              const char* type);
  void Sample(const std::string& name, const Labels& labels, double value);

  std::string text_;
  std::set<std::string> families_;
};

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_PROMETHEUS_TEXT_H_
