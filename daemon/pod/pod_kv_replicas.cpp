// SPDX-License-Identifier: Apache-2.0
#include "pod_kv_replicas.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>

#include "../kvstore/kv_service.hpp"
#include "../logging.hpp"
#include "cxlpool/common/mix64.hpp"
#include "kv_peer_link.hpp"
#include "kv_peer_socket.hpp"

namespace cxlpool::daemon {
namespace {

using namespace std::chrono_literals;

// Keys waiting to be offered to peers, and peers' keys waiting for the
// event loop: a burst of puts beyond these is not replicated (counted in
// replication_dropped) rather than held in memory or waited for.
constexpr size_t kMaxOutgoingKeys = 8192;
constexpr size_t kMaxIncomingKeys = 2048;

// FNV-1a of the name, then splitmix64's finalizer (mix64) over it and the
// key: cheap, well mixed, and fixed (std::hash may differ between builds).
uint64_t name_hash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

uint64_t replica_weight(const proto::KvKey& key, std::string_view host) {
  return mix64(key.lo ^ mix64(key.hi ^ mix64(name_hash(host))));
}

std::vector<PodMember> replica_candidates(const proto::KvKey& key, std::string_view self,
                                          std::span<const PodMember> members) {
  std::vector<std::pair<uint64_t, const PodMember*>> ranked;
  for (const PodMember& m : members) {
    if (m.host == self || m.address.empty()) continue;
    // One record per host; a duplicate would only repeat a target.
    if (std::any_of(ranked.begin(), ranked.end(), [&](const auto& r) { return r.second->host == m.host; })) continue;
    ranked.emplace_back(replica_weight(key, m.host), &m);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second->host < b.second->host;
  });
  std::vector<PodMember> out;
  out.reserve(ranked.size());
  for (const auto& [weight, m] : ranked) out.push_back(*m);
  return out;
}

struct PodKvReplicas::Connection : KvPeerLink {};

PodKvReplicas::PodKvReplicas(uint32_t replica_num, std::string self, MembersFn members, std::function<void()> wake,
                             std::function<void(KvPeerLink&)> setup_link)
    : replica_num_(replica_num),
      self_(std::move(self)),
      members_(std::move(members)),
      wake_(std::move(wake)),
      setup_link_(std::move(setup_link)) {
  if (enabled()) sender_ = std::thread([this] { send_loop(); });
}

PodKvReplicas::~PodKvReplicas() { stop(); }

void PodKvReplicas::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    counters_.dropped += outgoing_keys_ + incoming_keys_;
    outgoing_.clear();
    incoming_.clear();
    outgoing_keys_ = incoming_keys_ = 0;
  }
  cv_.notify_all();
  if (sender_.joinable()) sender_.join();
}

PodKvReplicaCounters PodKvReplicas::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

// ---------------------------------------------------------------- holder

void PodKvReplicas::replicate(const kvcache::NamespaceFingerprint& fp, std::span<const proto::KvKey> keys) {
  if (!enabled() || keys.empty()) return;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || outgoing_keys_ + keys.size() > kMaxOutgoingKeys) {
      // Each missing copy of each chunk counts.
      counters_.dropped += keys.size() * (replica_num_ - 1);
      return;
    }
    outgoing_.push_back({fp, {keys.begin(), keys.end()}});
    outgoing_keys_ += keys.size();
  }
  cv_.notify_one();
}

void PodKvReplicas::send_loop() {
  std::vector<std::unique_ptr<Connection>> connections;  // this thread's own
  for (;;) {
    Outgoing put;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !outgoing_.empty(); });
      if (stopping_) return;
      put = std::move(outgoing_.front());
      outgoing_.pop_front();
      outgoing_keys_ -= put.keys.size();
    }
    send(put, connections);
  }
}

void PodKvReplicas::send(const Outgoing& put, std::vector<std::unique_ptr<Connection>>& connections) {
  auto log = logger("pod");
  // One put's chunks go to the same peers: a get of the prefix it wrote
  // then finds them in one pin per peer.
  const std::vector<PodMember> candidates = replica_candidates(put.keys.front(), self_, members_());
  const size_t want = replica_num_ - 1;
  size_t placed = 0;
  for (const PodMember& m : candidates) {
    if (placed == want) break;
    auto it = std::find_if(connections.begin(), connections.end(), [&](const auto& c) { return c->host == m.host; });
    if (it == connections.end()) {
      connections.push_back(std::make_unique<Connection>());
      it = std::prev(connections.end());
      (*it)->host = m.host;
      if (setup_link_) setup_link_(**it);
    }
    Connection& c = **it;
    if (c.address != m.address) {  // a restarted peer may have moved
      c.address = m.address;
      c.fd.reset();
    }
    // At most kMaxPinKeys keys a request; the peer takes each on or not.
    bool answered = true;
    size_t accepted = 0;
    for (size_t from = 0; from < put.keys.size() && answered; from += kMaxPinKeys) {
      KvReplicateRequest request;
      request.from = self_;
      request.fp = put.fp;
      const size_t n = std::min(kMaxPinKeys, put.keys.size() - from);
      request.keys.assign(put.keys.begin() + static_cast<std::ptrdiff_t>(from),
                          put.keys.begin() + static_cast<std::ptrdiff_t>(from + n));
      auto frame = c.exchange(KvPeerType::kReplicate, encode_replicate_request(request), KvPeerType::kReplicateReply);
      auto reply = frame ? decode_replicate_reply(frame->body, n)
                         : Result<KvReplicateReply>(tl::unexpected(frame.error()));
      if (!reply) {
        if (frame) c.fd.reset();
        if (reply.error().message != c.last_warning) {
          log->warn("KV replication to '{}': {}", c.host, reply.error().message);
        }
        c.last_warning = reply.error().message;
        answered = false;
        break;
      }
      accepted += reply->accepted;
    }
    std::lock_guard lock(mutex_);
    if (!answered) {
      // The next member in the ranking holds the copy instead.
      ++counters_.errors;
      continue;
    }
    c.last_warning.clear();
    ++counters_.sent;
    counters_.dropped += put.keys.size() - accepted;
    ++placed;
  }
  if (placed < want) {
    std::lock_guard lock(mutex_);
    counters_.dropped += (want - placed) * put.keys.size();
  }
}

// ---------------------------------------------------------------- target

uint32_t PodKvReplicas::accept(KvReplicateRequest request) {
  const auto n = static_cast<uint32_t>(request.keys.size());
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || incoming_keys_ + n > kMaxIncomingKeys) {
      counters_.dropped += n;
      return 0;
    }
    incoming_keys_ += n;
    incoming_.push_back(std::move(request));
  }
  wake_();
  return n;
}

void PodKvReplicas::on_event(KvService* kv) {
  std::deque<KvReplicateRequest> requests;
  {
    std::lock_guard lock(mutex_);
    if (incoming_.empty()) return;
    requests.swap(incoming_);
    incoming_keys_ = 0;
  }
  size_t dropped = 0;
  while (!requests.empty()) {
    KvReplicateRequest& r = requests.front();
    bool later = false;
    const size_t taken = std::min(kv != nullptr ? kv->keep_replicas(r.fp, r.from, r.keys, later) : 0, r.keys.size());
    if (later) {
      // Wait, in order, with the requests behind it: they would find no
      // room either.
      r.keys.erase(r.keys.begin(), r.keys.begin() + static_cast<std::ptrdiff_t>(taken));
      break;
    }
    dropped += r.keys.size() - taken;
    requests.pop_front();
  }
  std::lock_guard lock(mutex_);
  counters_.dropped += dropped;
  if (requests.empty()) return;
  if (stopping_) {
    for (const auto& r : requests) counters_.dropped += r.keys.size();
    return;
  }
  // Ahead of what came meanwhile; still counted against the queue's bound.
  for (const auto& r : requests) incoming_keys_ += r.keys.size();
  incoming_.insert(incoming_.begin(), std::make_move_iterator(requests.begin()),
                   std::make_move_iterator(requests.end()));
}

void PodKvReplicas::copied(size_t copied, size_t asked) {
  std::lock_guard lock(mutex_);
  counters_.chunks += copied;
  if (copied < asked) ++counters_.errors;
}

}  // namespace cxlpool::daemon
