// SPDX-License-Identifier: Apache-2.0
// The Prometheus endpoint at http://ADDRESS:PORT/metrics. The event loop
// renders the text (metrics/prometheus_text.hpp); the HTTP thread only
// serves the latest rendering, so no pool state is shared.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "metrics/prometheus_text.hpp"

namespace httplib {
class Server;
}

namespace cxlpool::daemon {

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
