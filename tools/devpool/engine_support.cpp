// SPDX-License-Identifier: Apache-2.0
#include "engine_support.hpp"

#include "net_engines.hpp"

#include <sched.h>
#include <signal.h>
#include <time.h>

namespace cxlpool::devpool_tool {

void IdleBackoff::idle(std::span<pollfd> fds) {
  const auto now = std::chrono::steady_clock::now();
  if (idle_since_ == std::chrono::steady_clock::time_point{}) idle_since_ = now;
  if (now - idle_since_ < timing_.spin) {
    // Polling, but not at the expense of whoever shares this core (the
    // instance sending the next packet, the other engine on a small host).
    ::sched_yield();
    return;
  }
  const timespec ts{0, static_cast<long>(std::chrono::nanoseconds(sleep_).count())};
  ::ppoll(fds.data(), fds.size(), &ts, nullptr);
  sleep_ = std::min(sleep_ * 2, timing_.max_sleep);
}

Result<void> check_net_geometry(const devpool::LinkGeometry& g, devpool::Coherence coherence) {
  if (g.requests.record_bytes != kDescriptorBytes || g.completions.record_bytes != kDescriptorBytes) {
    return fail(EPROTO, "net: a link's channels do not carry 16-byte descriptors");
  }
  if (g.requests.coherence != coherence || g.completions.coherence != coherence) {
    return fail(EPROTO, "net: links and channels of mixed coherence");
  }
  return {};
}

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> stop{false};
  return stop;
}

namespace {
void on_stop_signal(int) { stop_requested().store(true); }
}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a sleeping ppoll returns at once
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace cxlpool::devpool_tool
