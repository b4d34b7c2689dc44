// SPDX-License-Identifier: Apache-2.0
#include "metrics_http.hpp"

#include <httplib.h>


namespace cxlpool::daemon {

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
