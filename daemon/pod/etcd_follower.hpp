// SPDX-License-Identifier: Apache-2.0
// Following a prefix of etcd on a thread of its own: list it, hand the
// listing over, watch it from the listing's revision and hand each batch of
// events over; when the watch ends (etcd closed it, the connection died, or
// it was silent for `idle_limit`: a connection that died without a reset
// must not leave the caller stale forever) list again. A failed listing is
// reported and retried every 250 ms. Pod membership and the device pool's
// state follow their prefixes this way.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "etcd_client.hpp"

namespace cxlpool::daemon {

class EtcdFollower {
 public:
  struct Handlers {
    std::function<void(EtcdRange&&)> listed;                   // a full listing (the first, and after each watch)
    std::function<void(const std::vector<EtcdEvent>&)> events;  // changes since
    std::function<void(const Error&)> failed;                   // a listing failed
  };

  // Starts the thread. `client` must outlive this object.
  EtcdFollower(EtcdClient& client, std::string prefix, std::chrono::milliseconds idle_limit, Handlers handlers);
  ~EtcdFollower();
  EtcdFollower(const EtcdFollower&) = delete;
  EtcdFollower& operator=(const EtcdFollower&) = delete;

  // Ends the thread; a handler running now finishes first.
  void stop();

 private:
  void run();

  EtcdClient& client_;
  std::string prefix_;
  std::chrono::milliseconds idle_limit_;
  Handlers handlers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> running_{true};
  std::thread thread_;
};

}  // namespace cxlpool::daemon
