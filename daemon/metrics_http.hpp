// SPDX-License-Identifier: Apache-2.0
// Prometheus text exposition of the daemon's counters at
// http://ADDRESS:PORT/metrics. The event loop renders the text; the HTTP
// thread only serves the latest rendering, so no pool state is shared.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/proto/messages.hpp"

namespace httplib {
class Server;
}

namespace cxlpool::daemon {

// "pool.regions_created" → "cxlpool_pool_regions_created";
// "tier.dram0.used_bytes" → "cxlpool_tier_used_bytes{tier=\"dram0\"}".
std::string render_prometheus(const std::vector<proto::Counter>& counters);

class MetricsServer {
 public:
  MetricsServer();
  ~MetricsServer();
  Result<void> start(const std::string& address, uint16_t port);
  void stop();
  void publish(std::string text);
  bool running() const { return thread_.joinable(); }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::mutex mutex_;
  std::string text_;
};

}  // namespace cxlpool::daemon
