// SPDX-License-Identifier: Apache-2.0
#include "prometheus_text.hpp"

#include <cctype>
#include <cstdio>
#include <map>

#include "metric_table.hpp"

namespace cxlpool::daemon {
namespace {

std::string sanitize(std::string_view name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out;
}

// Label values keep their text (tier "slow-a" and "slow_a" stay two series);
// only the characters the format reserves are escaped.
std::string escape_label_value(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_value(uint64_t value, double scale) {
  if (scale == 1) return std::to_string(value);
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value) * scale);
  return text;
}

std::string labels(const std::string& name, const std::string& value, std::string_view extra = {}) {
  std::string out;
  if (!name.empty()) out = name + "=\"" + escape_label_value(value) + "\"";
  if (!extra.empty()) out += (out.empty() ? "" : ",") + std::string(extra);
  return out.empty() ? out : "{" + out + "}";
}

struct Family {
  std::string header;
  std::string samples;
};

class FamilyList {
 public:
  Family& get(const std::string& name, std::string_view type, std::string_view help) {
    auto [it, added] = index_.try_emplace(name, families_.size());
    if (added) {
      families_.push_back({"# HELP " + name + " " + std::string(help) + "\n# TYPE " + name + " " +
                               std::string(type) + "\n",
                           {}});
    }
    return families_[it->second];
  }
  std::string text() const {
    std::string out;
    for (const auto& f : families_) out += f.header + f.samples;
    return out;
  }

 private:
  std::vector<Family> families_;
  std::map<std::string, size_t> index_;
};

void add_histogram(Family& f, const std::string& name, const MetricMatch& m, const DurationHistogram& h) {
  constexpr double kNs = 1e-9;
  for (size_t i = 0; i < DurationHistogram::kBoundsNs.size(); ++i) {
    char le[48];
    std::snprintf(le, sizeof le, "le=\"%g\"", static_cast<double>(DurationHistogram::kBoundsNs[i]) * kNs);
    f.samples += name + "_bucket" + labels(m.label_name, m.label_value, le) + " " + std::to_string(h.cumulative(i)) + "\n";
  }
  f.samples += name + "_bucket" + labels(m.label_name, m.label_value, "le=\"+Inf\"") + " " + std::to_string(h.count()) + "\n";
  f.samples += name + "_sum" + labels(m.label_name, m.label_value) + " " + format_value(h.sum_ns(), kNs) + "\n";
  f.samples += name + "_count" + labels(m.label_name, m.label_value) + " " + std::to_string(h.count()) + "\n";
}

}  // namespace

std::string render_prometheus(const std::vector<proto::Counter>& counters,
                              const std::vector<HistogramSample>& histograms) {
  FamilyList families;
  for (const auto& counter : counters) {
    const auto m = match_metric(counter.name);
    if (!m) {
      const std::string name = "cxlpool_" + sanitize(counter.name);
      families.get(name, "untyped", "Internal counter " + counter.name + " (not in the metrics table).").samples +=
          name + " " + std::to_string(counter.value) + "\n";
      continue;
    }
    const MetricSpec& spec = *m->spec;
    if (spec.name.empty() || spec.type == MetricType::kHistogram) continue;
    const std::string name(spec.name);
    families.get(name, to_string(spec.type), spec.help).samples +=
        name + labels(m->label_name, m->label_value) + " " + format_value(counter.value, spec.scale) + "\n";
  }
  for (const auto& sample : histograms) {
    const auto m = match_metric(sample.name);
    if (!m || m->spec->type != MetricType::kHistogram || sample.histogram == nullptr) continue;
    const std::string name(m->spec->name);
    add_histogram(families.get(name, "histogram", m->spec->help), name, *m, *sample.histogram);
  }
  return families.text();
}

}  // namespace cxlpool::daemon
