#include "cli/launch_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/table.h"

namespace leeway {

namespace {

// A flat JSON object: string keys, number or string values.
struct FlatObject {
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> strings;
};

// A JSON string at the front of `in` (escapes \" and \\ only: our own
// output), consumed.
bool ConsumeString(absl::string_view* in, std::string* out) {
  if (!absl::ConsumePrefix(in, "\"")) return false;
  out->clear();
  for (size_t i = 0; i < in->size(); ++i) {
    const char c = (*in)[i];
    if (c == '\\' && i + 1 < in->size()) {
      out->push_back((*in)[++i]);
    } else if (c == '"') {
      in->remove_prefix(i + 1);
      return true;
    } else {
      out->push_back(c);
    }
  }
  return false;
}

absl::StatusOr<FlatObject> ParseFlatObject(absl::string_view body) {
  body = absl::StripAsciiWhitespace(body);
  if (!absl::ConsumePrefix(&body, "{") || !absl::ConsumeSuffix(&body, "}")) {
    return absl::InvalidArgumentError("not a JSON object");
  }
  FlatObject out;
  body = absl::StripAsciiWhitespace(body);
  while (!body.empty()) {
    std::string key;
    if (!ConsumeString(&body, &key)) {
      return absl::InvalidArgumentError(absl::StrCat("bad key at '", body.substr(0, 20), "'"));
    }
    body = absl::StripLeadingAsciiWhitespace(body);
    if (!absl::ConsumePrefix(&body, ":")) {
      return absl::InvalidArgumentError(absl::StrCat("no value for '", key, "'"));
    }
    body = absl::StripLeadingAsciiWhitespace(body);
    if (!body.empty() && body[0] == '"') {
      std::string value;
      if (!ConsumeString(&body, &value)) {
        return absl::InvalidArgumentError(absl::StrCat("bad string for '", key, "'"));
      }
      out.strings[key] = value;
    } else {
      const size_t end = std::min(body.find(','), body.size());
      double value = 0;
      if (!absl::SimpleAtod(absl::StripAsciiWhitespace(body.substr(0, end)), &value)) {
        return absl::InvalidArgumentError(absl::StrCat("bad number for '", key, "'"));
      }
      out.numbers[key] = value;
      body.remove_prefix(end);
    }
    body = absl::StripLeadingAsciiWhitespace(body);
    if (!body.empty() && !absl::ConsumePrefix(&body, ",")) {
      return absl::InvalidArgumentError(absl::StrCat("expected ',' after '", key, "'"));
    }
    body = absl::StripLeadingAsciiWhitespace(body);
  }
  return out;
}

absl::Status Require(const FlatObject& o, std::initializer_list<const char*> keys,
                     const char* what) {
  for (const char* key : keys) {
    if (!o.numbers.count(key)) return absl::InvalidArgumentError(absl::StrCat(what, " lacks ", key));
  }
  return absl::OkStatus();
}

double Get(const FlatObject& o, const std::string& key, double otherwise = 0) {
  auto it = o.numbers.find(key);
  return it == o.numbers.end() ? otherwise : it->second;
}

}  // namespace

absl::StatusOr<WorkerResult> ParseWorkerResult(const std::string& json) {
  absl::StatusOr<FlatObject> o = ParseFlatObject(json);
  if (!o.ok()) return absl::InvalidArgumentError(absl::StrCat("a worker result: ", o.status().message()));
  absl::Status complete = Require(*o, {"rank", "test_accuracy", "samples_per_sec"}, "a worker result");
  if (!complete.ok()) return complete;
  WorkerResult r;
  r.rank = static_cast<int>(Get(*o, "rank"));
  r.clocks = static_cast<int>(Get(*o, "clocks"));
  r.test_accuracy = Get(*o, "test_accuracy");
  r.test_loss = Get(*o, "test_loss");
  r.samples_per_sec = Get(*o, "samples_per_sec");
  r.comm_share = Get(*o, "comm_share");
  r.pull_wait_share = Get(*o, "pull_wait_share");
  r.bytes_per_iter = Get(*o, "bytes_per_iter");
  r.messages_per_iter = Get(*o, "messages_per_iter");
  r.compression_ratio = Get(*o, "compression_ratio", 1.0);
  r.seconds = Get(*o, "seconds");
  return r;
}

absl::StatusOr<LaunchSummary> ParseSummary(const std::string& json) {
  absl::StatusOr<FlatObject> o = ParseFlatObject(json);
  if (!o.ok()) return absl::InvalidArgumentError(absl::StrCat("a summary: ", o.status().message()));
  absl::Status complete =
      Require(*o, {"test_accuracy", "samples_per_sec", "comm_share", "bytes_per_iter"}, "a summary");
  if (!complete.ok()) return complete;
  LaunchSummary s;
  s.run = o->strings["run"];
  s.servers = static_cast<int>(Get(*o, "servers"));
  s.workers = static_cast<int>(Get(*o, "workers"));
  s.clocks = static_cast<int>(Get(*o, "clocks"));
  s.seconds = Get(*o, "seconds");
  s.test_accuracy = Get(*o, "test_accuracy");
  s.test_accuracy_min = Get(*o, "test_accuracy_min");
  s.samples_per_sec = Get(*o, "samples_per_sec");
  s.comm_share = Get(*o, "comm_share");
  s.pull_wait_share = Get(*o, "pull_wait_share");
  s.bytes_per_iter = Get(*o, "bytes_per_iter");
  s.messages_per_iter = Get(*o, "messages_per_iter");
  s.staleness_p99 = Get(*o, "staleness_p99");
  s.compression_ratio = Get(*o, "compression_ratio", 1.0);
  return s;
}

LaunchSummary Summarize(const std::vector<WorkerResult>& results) {
  LaunchSummary s;
  s.workers = static_cast<int>(results.size());
  if (results.empty()) return s;
  s.test_accuracy_min = 1;
  s.compression_ratio = 0;
  for (const WorkerResult& r : results) {
    s.clocks = std::max(s.clocks, r.clocks);
    s.test_accuracy += r.test_accuracy / results.size();
    s.test_accuracy_min = std::min(s.test_accuracy_min, r.test_accuracy);
    s.samples_per_sec += r.samples_per_sec;
    s.comm_share += r.comm_share / results.size();
    s.pull_wait_share += r.pull_wait_share / results.size();
    s.bytes_per_iter += r.bytes_per_iter / results.size();
    s.messages_per_iter += r.messages_per_iter / results.size();
    s.compression_ratio += r.compression_ratio / results.size();
    s.seconds = std::max(s.seconds, r.seconds);
  }
  return s;
}

std::string SummaryJson(const LaunchSummary& s) {
  return absl::StrFormat(
      "{\"run\": \"%s\", \"servers\": %d, \"workers\": %d, \"clocks\": %d, "
      "\"seconds\": %.3f, \"test_accuracy\": %.5f, \"test_accuracy_min\": %.5f, "
      "\"samples_per_sec\": %.2f, \"comm_share\": %.5f, \"pull_wait_share\": %.5f, "
      "\"bytes_per_iter\": %.1f, \"messages_per_iter\": %.1f, \"staleness_p99\": %.3f, "
      "\"compression_ratio\": %.3f}",
      absl::StrReplaceAll(s.run, {{"\\", "\\\\"}, {"\"", "\\\""}}), s.servers, s.workers, s.clocks,
      s.seconds, s.test_accuracy, s.test_accuracy_min, s.samples_per_sec, s.comm_share,
      s.pull_wait_share, s.bytes_per_iter, s.messages_per_iter, s.staleness_p99,
      s.compression_ratio);
}

std::string SummaryTable(const LaunchSummary& s) {
  Table t({"RUN", "CLOCKS", "SECONDS", "TEST ACC", "SAMPLES/S", "COMM SHARE", "BYTES/ITER",
           "STALENESS P99", "COMPRESSION"});
  t.Add({s.run, absl::StrCat(s.clocks), absl::StrFormat("%.1f", s.seconds),
         s.test_accuracy < 0 ? std::string("-") : absl::StrFormat("%.2f%%", 100 * s.test_accuracy), absl::StrFormat("%.0f", s.samples_per_sec),
         absl::StrFormat("%.1f%%", 100 * s.comm_share), absl::StrFormat("%.0f", s.bytes_per_iter),
         absl::StrFormat("%.1f", s.staleness_p99), absl::StrFormat("%.1fx", s.compression_ratio)});
  return t.Render();
}

std::vector<HistoryPoint> ParseHistory(const std::string& text) {
  std::vector<HistoryPoint> points;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    HistoryPoint p;
    if (f.size() != 4 || !absl::SimpleAtod(f[0], &p.seconds) ||
        !absl::SimpleAtoi(f[1], &p.clock) || !absl::SimpleAtod(f[2], &p.loss) ||
        !absl::SimpleAtod(f[3], &p.accuracy) || !std::isfinite(p.loss)) {
      continue;
    }
    points.push_back(p);
  }
  return points;
}

namespace {

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// One panel: axes, ticks and a polyline per series of (x, y).
std::string Panel(const std::string& title, double x0, const std::vector<PlotSeries>& series,
                  bool accuracy) {
  constexpr double kH = 300, kLeft = 60, kTop = 30, kPlotW = 340, kPlotH = 220;
  double max_x = 1e-9, min_y = accuracy ? 1.0 : 0.0, max_y = accuracy ? 1.0 : 1e-9;
  for (const PlotSeries& s : series) {
    for (const HistoryPoint& p : s.points) {
      const double y = accuracy ? p.accuracy : p.loss;
      if (accuracy && y < 0) continue;
      max_x = std::max(max_x, p.seconds);
      min_y = std::min(min_y, y);
      max_y = std::max(max_y, y);
    }
  }
  if (accuracy) min_y = std::max(0.0, std::floor(min_y * 10) / 10);
  if (max_y <= min_y) max_y = min_y + 1;
  auto px = [&](double x) { return x0 + kLeft + kPlotW * x / max_x; };
  auto py = [&](double y) { return kTop + kPlotH * (1 - (y - min_y) / (max_y - min_y)); };
  std::string svg = absl::StrFormat(
      "<text x=\"%.0f\" y=\"18\" font-size=\"14\" text-anchor=\"middle\">%s</text>\n"
      "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#888\"/>\n",
      x0 + kLeft + kPlotW / 2, title, x0 + kLeft, kTop, kPlotW, kPlotH);
  for (int i = 0; i <= 4; ++i) {
    const double y = min_y + (max_y - min_y) * i / 4, x = max_x * i / 4;
    absl::StrAppendFormat(&svg,
                          "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" text-anchor=\"end\">%.3g</text>\n"
                          "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" text-anchor=\"middle\">%.3g</text>\n",
                          x0 + kLeft - 4, py(y) + 3, y, px(x), kTop + kPlotH + 14, x);
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">seconds</text>\n",
                        x0 + kLeft + kPlotW / 2, kH - 28);
  for (size_t i = 0; i < series.size(); ++i) {
    std::string points;
    for (const HistoryPoint& p : series[i].points) {
      const double y = accuracy ? p.accuracy : p.loss;
      if (accuracy && y < 0) continue;
      absl::StrAppendFormat(&points, "%.1f,%.1f ", px(p.seconds), py(y));
    }
    absl::StrAppendFormat(&svg,
                          "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n",
                          kColors[i % 8], points);
  }
  return svg;
}

}  // namespace

std::string PlotSvg(const std::vector<PlotSeries>& series) {
  const double legend = 20.0 * series.size();
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"840\" height=\"%.0f\" "
      "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      300 + legend);
  svg += Panel("training loss", 0, series, false);
  svg += Panel("test accuracy", 420, series, true);
  for (size_t i = 0; i < series.size(); ++i) {
    const double y = 295 + 20.0 * i;
    absl::StrAppendFormat(&svg,
                          "<line x1=\"60\" y1=\"%.0f\" x2=\"90\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"3\"/>\n"
                          "<text x=\"96\" y=\"%.0f\" font-size=\"12\">%s</text>\n",
                          y, y, kColors[i % 8], y + 4, Escape(series[i].label));
  }
  // The data behind the lines, so that a later run can add its own
  // (PlotSeriesIn).
  for (const PlotSeries& s : series) {
    absl::StrAppend(&svg, "<!-- leeway-series ", absl::StrReplaceAll(s.label, {{"-", "&#45;"}}),
                    " -->\n<!-- leeway-points");
    for (const HistoryPoint& p : s.points) {
      absl::StrAppendFormat(&svg, " %.3f,%d,%.6g,%.6g", p.seconds, p.clock, p.loss, p.accuracy);
    }
    svg += " -->\n";
  }
  return svg + "</svg>\n";
}

std::vector<PlotSeries> PlotSeriesIn(const std::string& svg) {
  std::vector<PlotSeries> out;
  for (absl::string_view line : absl::StrSplit(svg, '\n')) {
    if (absl::ConsumePrefix(&line, "<!-- leeway-series ") && absl::ConsumeSuffix(&line, " -->")) {
      out.push_back({absl::StrReplaceAll(line, {{"&#45;", "-"}}), {}});
    } else if (absl::ConsumePrefix(&line, "<!-- leeway-points") &&
               absl::ConsumeSuffix(&line, " -->") && !out.empty()) {
      std::string csv;
      for (absl::string_view point : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
        absl::StrAppend(&csv, point, "\n");
      }
      out.back().points = ParseHistory(csv);
    }
  }
  return out;
}

}  // namespace leeway
