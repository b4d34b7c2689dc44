// SPDX-License-Identifier: Apache-2.0
#include "pod_kv_probe.hpp"

#include <sys/socket.h>

#include <algorithm>

#include "../logging.hpp"
#include "cxlpool/common/clock.hpp"
#include "kv_peer_link.hpp"
#include "kv_peer_socket.hpp"

namespace cxlpool::daemon {
namespace {

using namespace std::chrono_literals;

// As a fetch's exchanges: a peer that does not answer in time is skipped.
// A whole probe, over every member it asks: the lookup is answered then
// with what is known.
constexpr uint64_t kProbeBudgetNs = 5'000'000'000ULL;

uint64_t key_hash(const proto::KvKey& k) { return k.lo ^ (k.hi * 0x9E3779B97F4A7C15ULL); }

}  // namespace

std::vector<PodMember> kv_peer_walk(std::vector<PodMember> members, const std::string& self,
                                    const proto::KvKey& first) {
  std::vector<PodMember> peers;
  for (PodMember& m : members) {
    if (m.host != self && !m.address.empty()) peers.push_back(std::move(m));
  }
  std::sort(peers.begin(), peers.end(), [](const PodMember& a, const PodMember& b) { return a.host < b.host; });
  if (!peers.empty()) {
    std::rotate(peers.begin(), peers.begin() + static_cast<std::ptrdiff_t>(key_hash(first) % peers.size()),
                peers.end());
  }
  return peers;
}

struct PodKvProbe::Link : KvPeerLink {};

PodKvProbe::PodKvProbe(std::string self_host, MembersFn members, std::function<void()> wake,
                       std::function<void(KvPeerLink&)> setup_link)
    : self_(std::move(self_host)),
      members_(std::move(members)),
      wake_(std::move(wake)),
      setup_link_(std::move(setup_link)) {
  thread_ = std::thread([this] { run(); });
}

PodKvProbe::~PodKvProbe() { stop(); }

void PodKvProbe::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (const KvProbeJob& job : jobs_) results_.push_back({job.ticket, 0});
    jobs_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PodKvProbe::probe(KvProbeJob job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      results_.push_back({job.ticket, 0});
    } else {
      jobs_.push_back(std::move(job));
    }
  }
  cv_.notify_one();
}

void PodKvProbe::take_results(std::vector<KvProbeResult>& out) {
  std::lock_guard lock(mutex_);
  out.insert(out.end(), results_.begin(), results_.end());
  results_.clear();
}

void PodKvProbe::count_served() {
  std::lock_guard lock(mutex_);
  ++counters_.probes_served;
}

PodKvProbeCounters PodKvProbe::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

void PodKvProbe::run() {
  std::vector<Link> links;
  for (;;) {
    KvProbeJob job;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    const size_t held = job.keys.empty() ? 0 : run_job(job, links);
    {
      std::lock_guard lock(mutex_);
      results_.push_back({job.ticket, held});
      ++counters_.probes;
      counters_.probe_hits += held;
    }
    wake_();
  }
}

// Walks the members as a fetch would: each is asked for the keys after
// what the ones before it hold, until the prefix is whole.
size_t PodKvProbe::run_job(const KvProbeJob& job, std::vector<Link>& links) {
  const uint64_t deadline = monotonic_ns() + kProbeBudgetNs;
  size_t held = 0;
  for (const PodMember& m : kv_peer_walk(members_(), self_, job.keys.front())) {
    if (held == job.keys.size() || monotonic_ns() > deadline) break;
    auto it = std::find_if(links.begin(), links.end(), [&](const Link& l) { return l.host == m.host; });
    if (it == links.end()) {
      links.emplace_back();
      it = std::prev(links.end());
      it->host = m.host;
      if (setup_link_) setup_link_(*it);
    }
    Link& link = *it;
    if (link.address != m.address) {  // a restarted peer may have moved
      link.address = m.address;
      link.fd.reset();
    }
    KvPinRequest ask;
    ask.from = self_;
    ask.fp = job.fp;
    ask.keys.assign(job.keys.begin() + static_cast<std::ptrdiff_t>(held), job.keys.end());
    auto frame = link.exchange(KvPeerType::kProbe, encode_probe_request(ask), KvPeerType::kProbeReply);
    auto reply = frame ? decode_probe_reply(frame->body, ask.keys.size())
                       : Result<KvProbeReply>(tl::unexpected(frame.error()));
    if (!reply) {
      if (frame) link.fd.reset();
      {
        std::lock_guard lock(mutex_);
        ++counters_.probe_errors;
      }
      if (reply.error().message != link.last_warning) {
        logger("pod")->warn("KV probe of '{}': {}", link.host, reply.error().message);
      }
      link.last_warning = reply.error().message;
      continue;
    }
    held += reply->held;
  }
  return held;
}

}  // namespace cxlpool::daemon
