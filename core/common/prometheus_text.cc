#include "core/common/prometheus_text.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace leeway {
namespace {

std::string Escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  return absl::StrFormat("%.17g", v);
}

}  // namespace

void PrometheusText::Family(const std::string& name, const std::string& help,
                            const char* type) {
  if (!families_.insert(name).second) return;
  absl::StrAppend(&text_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ",
                  type, "\n");
}

void PrometheusText::Sample(const std::string& name, const Labels& labels,
                            double value) {
  text_ += name;
  if (!labels.empty()) {
    text_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      absl::StrAppend(&text_, i == 0 ? "" : ",", labels[i].first, "=\"",
                      Escape(labels[i].second), "\"");
    }
    text_ += '}';
  }
  absl::StrAppend(&text_, " ", Number(value), "\n");
}

void PrometheusText::Counter(const std::string& name, const std::string& help,
                             double value, const Labels& labels) {
  Family(name, help, "counter");
  Sample(name, labels, value);
}

void PrometheusText::Gauge(const std::string& name, const std::string& help,
                           double value, const Labels& labels) {
  Family(name, help, "gauge");
  Sample(name, labels, value);
}

void PrometheusText::Histogram(const std::string& name, const std::string& help,
                               const std::vector<double>& bounds,
                               const std::vector<uint64_t>& counts, double sum,
                               const Labels& labels) {
  Family(name, help, "histogram");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    Labels with_le = labels;
    with_le.emplace_back("le", i < bounds.size() ? Number(bounds[i]) : "+Inf");
    Sample(name + "_bucket", with_le, double(cumulative));
  }
  Sample(name + "_sum", labels, sum);
  Sample(name + "_count", labels, double(cumulative));
}

}  // namespace leeway
