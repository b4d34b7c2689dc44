// SPDX-License-Identifier: Apache-2.0
#include "metrics_http.hpp"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <set>

namespace cxlpool::daemon {
namespace {

std::string sanitize(std::string_view name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out;
}

// "tiering.tier.<tier>.<x>" and "tiering.source.<source>.<x>": one metric
// per x with the tier or source as a label. Totals get Prometheus' _total
// suffix; what describes the last epoch is a gauge.
bool labelled_tiering_metric(std::string_view name, std::string& metric, std::string& labels, bool& gauge) {
  static constexpr std::pair<std::string_view, std::string_view> kKinds[] = {
      {"tiering.tier.", "tier"}, {"tiering.source.", "source"}};
  for (const auto& [prefix, label] : kKinds) {
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t dot = name.rfind('.');
    if (dot == std::string_view::npos || dot <= prefix.size()) return false;
    const std::string_view what = name.substr(dot + 1);
    gauge = what == "hot_pages" || (what == "accesses" && label == "tier") || what == "bandwidth_bps";
    metric = std::string("cxlpool_tiering_") + (label == "source" ? "source_" : "") + sanitize(what) +
             (gauge ? "" : "_total");
    labels = "{" + std::string(label) + "=\"" + std::string(name.substr(prefix.size(), dot - prefix.size())) + "\"}";
    return true;
  }
  return false;
}

// "kv.tier.<tier>.<x>": one metric per x with the store's tier as a label
// (dram, cxl, ssd: the KV store's own tiers, not pool tiers).
bool labelled_kv_tier_metric(std::string_view name, std::string& metric, std::string& labels, bool& gauge) {
  static constexpr std::string_view kPrefix = "kv.tier.";
  if (name.rfind(kPrefix, 0) != 0) return false;
  const size_t dot = name.find('.', kPrefix.size());
  if (dot == std::string_view::npos) return false;
  const std::string_view what = name.substr(dot + 1);
  gauge = what == "capacity_bytes" || what == "used_bytes" || what == "chunks";
  metric = "cxlpool_kv_tier_" + sanitize(what) + (gauge ? "" : "_total");
  labels = "{kv_tier=\"" + std::string(name.substr(kPrefix.size(), dot - kPrefix.size())) + "\"}";
  return true;
}

// KV store values that describe the present rather than count events.
bool kv_gauge(std::string_view name) {
  static constexpr std::string_view kGauges[] = {"kv.enabled", "kv.started", "kv.connections", "kv.leases",
                                                 "kv.reservations", "kv.io_in_flight", "kv.ssd_durable_sequence"};
  return std::find(std::begin(kGauges), std::end(kGauges), name) != std::end(kGauges);
}

}  // namespace

std::string render_prometheus(const std::vector<proto::Counter>& counters) {
  std::string out;
  std::set<std::string> typed;
  for (const auto& counter : counters) {
    std::string metric;
    std::string labels;
    const std::string_view name = counter.name;
    bool tiering_gauge = false;
    if (labelled_tiering_metric(name, metric, labels, tiering_gauge) ||
        labelled_kv_tier_metric(name, metric, labels, tiering_gauge)) {
      if (typed.insert(metric).second) out += "# TYPE " + metric + (tiering_gauge ? " gauge\n" : " counter\n");
      out += metric + labels + " " + std::to_string(counter.value) + "\n";
      continue;
    }
    if (name.rfind("tier.", 0) == 0) {
      const size_t dot = name.find('.', 5);
      if (dot == std::string_view::npos) continue;
      metric = "cxlpool_tier_" + sanitize(name.substr(dot + 1));
      // The tier's own name: label values may hold '-', and sanitizing would
      // merge tiers such as "slow-a" and "slow_a" into one series.
      labels = "{tier=\"" + std::string(name.substr(5, dot - 5)) + "\"}";
    } else {
      metric = "cxlpool_" + sanitize(name);
    }
    if (typed.insert(metric).second) {
      const bool gauge = metric.find("_bytes") != std::string::npos || metric.find("connected") != std::string::npos ||
                         metric.find("_count") != std::string::npos || metric.find("uptime") != std::string::npos ||
                         kv_gauge(name);
      out += "# TYPE " + metric + (gauge ? " gauge\n" : " counter\n");
    }
    out += metric + labels + " " + std::to_string(counter.value) + "\n";
  }
  return out;
}

MetricsServer::MetricsServer() = default;
MetricsServer::~MetricsServer() { stop(); }

Result<void> MetricsServer::start(const std::string& address, uint16_t port) {
  server_ = std::make_unique<httplib::Server>();
  server_->new_task_queue = [] { return new httplib::ThreadPool(1); };
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mutex_);
    res.set_content(text_, "text/plain; version=0.0.4");
  });
  if (!server_->bind_to_port(address.c_str(), port)) {
    server_.reset();
    return fail(EADDRINUSE, "cannot listen for metrics on " + address + ":" + std::to_string(port));
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return {};
}

void MetricsServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

void MetricsServer::publish(std::string text) {
  std::lock_guard lock(mutex_);
  text_ = std::move(text);
}

}  // namespace cxlpool::daemon
