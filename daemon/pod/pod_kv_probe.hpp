// SPDX-License-Identifier: Apache-2.0
// Lookups across the pod (docs/pods.md): a lookup that stops short here
// asks the live members, in the order a get's fetch would, how many of the
// keys after the local prefix they hold (kProbe: nothing pinned, nothing
// read). A thread of its own with its own control connections does the
// asking, bounded by the fetches' timeouts; the event loop only hands out
// jobs and takes results. Also the holder's side of the wait for the event
// loop, which pins and probes share.
#pragma once

#include "kv_peer_link.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../kvstore/kv_remote.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "pod_member.hpp"

namespace cxlpool::daemon {

// The members a reader asks for keys starting with `first`, in order: the
// live ones other than `self` with an address, sorted by name, the walk
// starting at one chosen by the key so that readers spread over holders.
std::vector<PodMember> kv_peer_walk(std::vector<PodMember> members, const std::string& self,
                                    const proto::KvKey& first);

// An answer a connection thread waits for from the event loop. The loop
// gives it once; a waiter that gave up (the daemon stops) makes the give
// return false, so that the giver can undo what it did for it (unpin).
template <typename T>
class LoopAnswer {
 public:
  bool give(T value) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return false;
      value_ = std::move(value);
      closed_ = true;
    }
    cv_.notify_all();
    return true;
  }
  // Waits for the answer; nullopt when `stopping()` became true first.
  std::optional<T> wait(const std::function<bool()>& stopping) {
    std::unique_lock lock(mutex_);
    while (!closed_) {
      if (!cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return closed_; }) && stopping()) {
        closed_ = true;
        return std::nullopt;
      }
    }
    return std::move(value_);
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool closed_ = false;
  std::optional<T> value_;
};

// Member, and its metric's name after "pod.kv.".
// clang-format off
#define CXLPOOL_POD_KV_PROBE_COUNTERS(X)                                                            \
  X(probes,        "lookup_probes")      /* lookups that asked peers for the keys they missed */   \
  X(probe_hits,    "lookup_probe_hits")  /* chunks peers said they hold, over those lookups */     \
  X(probe_errors,  "lookup_probe_errors") /* failed probe exchanges */                             \
  X(probes_served, "probes_served")      /* peers' probes answered here */
// clang-format on

struct PodKvProbeCounters {
  CXLPOOL_POD_KV_PROBE_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_POD_KV_PROBE_COUNTERS)
};

class PodKvProbe {
 public:
  using MembersFn = std::function<std::vector<PodMember>()>;
  // `wake` tells the event loop that results are waiting.
  PodKvProbe(std::string self_host, MembersFn members, std::function<void()> wake,
             std::function<void(KvPeerLink&)> setup_link = {});
  ~PodKvProbe();
  PodKvProbe(const PodKvProbe&) = delete;
  PodKvProbe& operator=(const PodKvProbe&) = delete;

  // Ends the thread; queued jobs are answered "none held".
  void stop();
  void probe(KvProbeJob job);
  void take_results(std::vector<KvProbeResult>& out);
  void count_served();
  [[nodiscard]] PodKvProbeCounters counters() const;

 private:
  struct Link;
  void run();
  size_t run_job(const KvProbeJob& job, std::vector<Link>& links);

  std::string self_;
  MembersFn members_;
  std::function<void()> wake_;
  // Run on each new link (the pod's authentication, when it has a secret).
  std::function<void(KvPeerLink&)> setup_link_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::deque<KvProbeJob> jobs_;
  std::vector<KvProbeResult> results_;
  PodKvProbeCounters counters_;
  std::thread thread_;
};

}  // namespace cxlpool::daemon
