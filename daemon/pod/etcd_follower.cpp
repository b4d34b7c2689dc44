// SPDX-License-Identifier: Apache-2.0
#include "etcd_follower.hpp"

namespace cxlpool::daemon {
namespace {

constexpr auto kRetry = std::chrono::milliseconds(250);  // after a failed listing

}  // namespace

EtcdFollower::EtcdFollower(EtcdClient& client, std::string prefix, std::chrono::milliseconds idle_limit,
                           Handlers handlers)
    : client_(client), prefix_(std::move(prefix)), idle_limit_(idle_limit), handlers_(std::move(handlers)) {
  thread_ = std::thread([this] { run(); });
}

EtcdFollower::~EtcdFollower() { stop(); }

void EtcdFollower::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // A watch blocks in a read: closing its socket ends it. It may be between
  // two requests when cancelled; cancel_watch() also makes the next one end
  // at once, and repeating it covers a request that was opening its socket.
  while (running_) {
    client_.cancel_watch();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (thread_.joinable()) thread_.join();
}

void EtcdFollower::run() {
  struct Done {
    std::atomic<bool>& running;
    ~Done() { running = false; }
  } done{running_};
  auto stopping = [this] {
    std::lock_guard lock(mutex_);
    return stopping_;
  };
  while (!stopping()) {
    auto listing = client_.range_prefix(prefix_);
    if (!listing) {
      handlers_.failed(listing.error());
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, kRetry, [&] { return stopping_; });
      continue;
    }
    const uint64_t revision = listing->revision;
    handlers_.listed(std::move(*listing));
    // Ended, whatever the reason: list again (the listing tells whether
    // etcd is reachable).
    (void)client_.watch_prefix(prefix_, revision + 1, idle_limit_,
                               [this](const std::vector<EtcdEvent>& events, uint64_t) { handlers_.events(events); });
  }
}

}  // namespace cxlpool::daemon
