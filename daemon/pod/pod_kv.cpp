// SPDX-License-Identifier: Apache-2.0
#include "pod_kv.hpp"

#include "kv_peer_link.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_map>

#include "../kvstore/kv_service.hpp"
#include "../logging.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/crc32c.hpp"
#include "kv_peer_link.hpp"
#include "kv_peer_socket.hpp"

namespace cxlpool::daemon {
namespace {

using namespace std::chrono_literals;

// A pin a reader never released (it hung, or its unpin was lost) is let go
// after this long: the chunk may then move, and a late read of it fails
// its checksum instead of returning other bytes.
constexpr uint64_t kPinTimeoutNs = 30'000'000'000ULL;
constexpr uint32_t kMaxPeerConnections = 64;
// Pins one connection may hold at once: a peer that never unpins cannot
// keep more than this much of the arenas from being evicted.
constexpr size_t kMaxPinsPerConnection = 4 * kMaxPinKeys;
constexpr int kFetchThreads = 2;
// A peer has this long to finish the handshake of an authenticated pod.
constexpr uint64_t kAuthTimeoutNs = 5'000'000'000ULL;

// "ADDRESS:PORT" of a connection's peer, for the log.
std::string peer_address(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  char host[NI_MAXHOST] = "?";
  char port[NI_MAXSERV] = "?";
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    (void)::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, port, sizeof port,
                        NI_NUMERICHOST | NI_NUMERICSERV);
  }
  return std::string(host) + ":" + port;
}

}  // namespace

struct PodKv::Link : KvPeerLink {
  std::optional<hal::PeerId> peer;  // its transport card, added to the engine
};

PodKv::PodKv(const PodSection& config, std::string self_host, PodFabric& fabric, MembersFn members,
             uint64_t slot_bytes, PodSecret secret)
    : config_(config),
      self_(std::move(self_host)),
      fabric_(fabric),
      members_(std::move(members)),
      slot_bytes_(slot_bytes),
      secret_(std::move(secret)),
      event_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      stop_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      replicas_(config.replica_num, self_, members_, [this] { wake(); },
                [this](KvPeerLink& link) { secure_link(link); }) {
  if (config_.address.empty()) {
    serve_error_ = "[pod] address is empty: peers cannot read this host's KV chunks";
  } else if (auto fd = kv_peer_listen(config_.address); !fd) {
    serve_error_ = fd.error().message;
  } else {
    listen_fd_ = std::move(*fd);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  if (!serve_error_.empty()) logger("pod")->error("KV chunks not served to peers: {}", serve_error_);
  for (int i = 0; i < kFetchThreads; ++i) fetchers_.emplace_back([this] { fetch_loop(); });
  prober_ = std::make_unique<PodKvProbe>(self_, members_, [this] { wake(); },
                                         [this](KvPeerLink& link) { secure_link(link); });
}

PodKv::~PodKv() { stop(); }

void PodKv::stop() {
  std::deque<std::shared_ptr<LoopTask>> pending;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !acceptor_.joinable() && fetchers_.empty()) return;
    stopping_ = true;
    pending.swap(tasks_);
  }
  replicas_.stop();
  jobs_cv_.notify_all();
  const uint64_t one = 1;
  (void)!::write(stop_fd_.get(), &one, sizeof one);
  // Connection threads waiting for the loop see stopping_ and give up.
  pending.clear();
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> connections;
  {
    std::lock_guard lock(mutex_);
    connections.swap(connections_);
  }
  for (auto& t : connections) t.join();
  for (auto& t : fetchers_) t.join();
  fetchers_.clear();
  if (prober_) prober_->stop();
}

void PodKv::wake() {
  const uint64_t one = 1;
  (void)!::write(event_fd_.get(), &one, sizeof one);
}

bool PodKv::stopping() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

template <typename T>
std::optional<T> PodKv::ask_loop(std::function<void(KvService*, const std::shared_ptr<LoopAnswer<T>>&)> run) {
  auto answer = std::make_shared<LoopAnswer<T>>();
  auto task = std::make_shared<LoopTask>();
  task->run = [answer, run = std::move(run)](KvService* kv) { run(kv, answer); };
  if (!post(task)) return std::nullopt;
  return answer->wait([this] { return stopping(); });
}

bool PodKv::post(const std::shared_ptr<LoopTask>& task) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    tasks_.push_back(task);
  }
  wake();
  return true;
}

void PodKv::on_event(KvService* kv) {
  uint64_t value = 0;
  (void)!::read(event_fd_.get(), &value, sizeof value);
  std::deque<std::shared_ptr<LoopTask>> tasks;
  {
    std::lock_guard lock(mutex_);
    tasks.swap(tasks_);
  }
  for (auto& t : tasks) t->run(kv);
  replicas_.on_event(kv);
  // Fetch results are taken by the KV service's next poll, which this
  // wake-up lets run.
}

void PodKv::count(const std::function<void(PodKvCounters&)>& change) {
  std::lock_guard lock(mutex_);
  change(counters_);
}

void PodKv::secure_link(KvPeerLink& link) {
  if (secret_.empty()) return;
  link.on_connect = [this, host = link.host](int fd) -> Result<void> {
    auto ok = kv_auth_client(fd, secret_, self_, host);
    if (!ok) auth_failed("to '" + host + "'", ok.error());
    return ok;
  };
}

void PodKv::auth_failed(const std::string& who, const Error& error) {
  count([](PodKvCounters& c) { ++c.auth_failures; });
  uint64_t suppressed = 0;
  if (auth_log_.allow(monotonic_ns(), suppressed)) {
    logger("pod")->warn("KV control connection {} refused: {}{}", who, error.message,
                        suppressed == 0 ? "" : " (" + std::to_string(suppressed) + " more since the last such line)");
  }
}

PodKvCounters PodKv::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

// ---------------------------------------------------------------- holder

void PodKv::reap_connections() {
  std::vector<std::thread> done;
  {
    std::lock_guard lock(mutex_);
    for (const std::thread::id id : finished_) {
      auto it = std::find_if(connections_.begin(), connections_.end(), [&](const auto& t) { return t.get_id() == id; });
      if (it == connections_.end()) continue;
      done.push_back(std::move(*it));
      connections_.erase(it);
    }
    finished_.clear();
  }
  for (auto& t : done) t.join();  // each has returned from serve()
}

void PodKv::accept_loop() {
  for (;;) {
    reap_connections();
    pollfd p[2] = {{listen_fd_.get(), POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    // Wakes up every second to join the connection threads that returned.
    if (::poll(p, 2, 1000) < 0 && errno != EINTR) return;
    if (p[1].revents != 0) return;
    if (p[0].revents == 0) continue;
    UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) continue;
    if (live_connections_ >= kMaxPeerConnections) continue;  // closed: the peer retries later
    ++live_connections_;
    count([](PodKvCounters& c) { ++c.peer_connections; });
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    connections_.emplace_back([this, fd = std::move(fd)]() mutable {
      serve(std::move(fd));
      std::lock_guard finished(mutex_);
      finished_.push_back(std::this_thread::get_id());
    });
  }
}

void PodKv::serve(UniqueFd fd) {
  struct Held {
    proto::KvKey key;
    uint64_t since_ns = 0;
  };
  std::unordered_map<uint64_t, Held> pins;
  uint64_t next_pin = 1;
  auto unpin = [&](std::vector<proto::KvKey> keys) {
    if (keys.empty()) return;
    auto task = std::make_shared<LoopTask>();
    task->run = [keys = std::move(keys)](KvService* kv) {
      if (kv != nullptr) kv->unpin_for_peer(keys);
    };
    (void)post(task);
  };
  timeval tv{};
  tv.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(kKvPeerExchangeTimeout).count();
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  auto log = logger("pod");
  // With a secret nothing is read from a peer before it has proven it
  // holds it; the name it proved is the only one its pins may carry.
  std::string peer;
  if (!secret_.empty()) {
    auto authenticated = kv_auth_server(fd.get(), secret_, self_, monotonic_ns() + kAuthTimeoutNs, stop_fd_.get());
    if (!authenticated) {
      if (authenticated.error().code != ECANCELED) auth_failed("from " + peer_address(fd.get()), authenticated.error());
      --live_connections_;
      return;
    }
    peer = std::move(*authenticated);
  }
  for (;;) {
    pollfd p[2] = {{fd.get(), POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    const int ready = ::poll(p, 2, 1000);
    if (p[1].revents != 0) break;
    const uint64_t now = monotonic_ns();
    std::vector<proto::KvKey> expired;
    for (auto it = pins.begin(); it != pins.end();) {
      if (now - it->second.since_ns < kPinTimeoutNs) {
        ++it;
        continue;
      }
      expired.push_back(it->second.key);
      it = pins.erase(it);
    }
    unpin(std::move(expired));
    if (ready <= 0 || p[0].revents == 0) continue;
    auto frame = recv_kv_peer_frame(fd.get());
    if (!frame) {
      if (frame.error().code != ECONNRESET) log->warn("KV peer connection: {}", frame.error().message);
      break;
    }
    Result<void> sent;
    if (frame->header.type == KvPeerType::kPin) {
      auto request = decode_pin_request(frame->body);
      if (!request) {
        log->warn("KV peer: {}", request.error().message);
        break;
      }
      if (!peer.empty() && request->from != peer) {
        auth_failed("from '" + peer + "'", Error{EACCES, "a pin request in the name of '" + request->from + "'"});
        break;
      }
      std::vector<proto::KvKey> keys = request->keys;
      // Over its pin limit a peer finds nothing here until it unpins.
      keys.resize(std::min(keys.size(), kMaxPinsPerConnection - std::min(kMaxPinsPerConnection, pins.size())));
      std::vector<KvPeerChunk> chunks;
      if (!keys.empty()) {
        // Answered once the chunks only on SSD here are read into arena
        // slots and pinned with the rest; the event loop does not wait.
        auto answer = ask_loop<std::vector<KvPeerChunk>>(
            [fp = request->fp, keys](KvService* kv, const std::shared_ptr<LoopAnswer<std::vector<KvPeerChunk>>>& a) {
              if (kv == nullptr) {
                (void)a->give({});
                return;
              }
              kv->pin_for_peer(fp, keys, [a](std::vector<KvPeerChunk> c) { return a->give(std::move(c)); });
            });
        if (!answer) break;
        chunks = std::move(*answer);
      }
      KvPinReply reply;
      for (size_t i = 0; i < chunks.size(); ++i) {
        const KvPeerChunk& c = chunks[i];
        // Pinned: the bytes cannot change while the checksum is taken.
        const uint32_t crc = c.crc_known ? c.crc : crc32c({c.bytes, c.length});
        const uint64_t id = next_pin++;
        pins[id] = Held{request->keys[i], monotonic_ns()};
        reply.entries.push_back({id, c.region_key, c.offset, c.length, crc});
      }
      const size_t served = chunks.size();
      const auto loaded = static_cast<uint64_t>(std::count_if(chunks.begin(), chunks.end(), [](const KvPeerChunk& c) { return c.loaded; }));
      count([&](PodKvCounters& c) {
        c.pins_served += served;
        c.ssd_loads_for_peers += loaded;
      });
      fabric_.count(request->from, [&](PodPeerCounters& c) { c.pins_served += served; });
      sent = send_kv_peer_frame(fd.get(), KvPeerType::kPinReply, frame->header.id, encode_pin_reply(reply));
    } else if (frame->header.type == KvPeerType::kUnpin) {
      auto request = decode_unpin_request(frame->body);
      if (!request) {
        log->warn("KV peer: {}", request.error().message);
        break;
      }
      std::vector<proto::KvKey> keys;
      for (uint64_t id : request->pin_ids) {
        if (auto it = pins.find(id); it != pins.end()) {
          keys.push_back(it->second.key);
          pins.erase(it);
        }
      }
      unpin(std::move(keys));
      sent = send_kv_peer_frame(fd.get(), KvPeerType::kUnpinReply, frame->header.id, {});
    } else if (frame->header.type == KvPeerType::kProbe) {
      auto request = decode_probe_request(frame->body);
      if (!request) {
        log->warn("KV peer: {}", request.error().message);
        break;
      }
      if (!peer.empty() && request->from != peer) {
        auth_failed("from '" + peer + "'", Error{EACCES, "a probe in the name of '" + request->from + "'"});
        break;
      }
      auto held = ask_loop<size_t>(
          [fp = request->fp, keys = request->keys](KvService* kv, const std::shared_ptr<LoopAnswer<size_t>>& a) {
            (void)a->give(kv != nullptr ? kv->held_prefix(fp, keys) : 0);
          });
      if (!held) break;
      prober_->count_served();
      sent = send_kv_peer_frame(fd.get(), KvPeerType::kProbeReply, frame->header.id,
                                encode_probe_reply({static_cast<uint32_t>(*held)}));
    } else if (frame->header.type == KvPeerType::kReplicate) {
      auto request = decode_replicate_request(frame->body);
      if (!request) {
        log->warn("KV peer: {}", request.error().message);
        break;
      }
      if (!peer.empty() && request->from != peer) {
        auth_failed("from '" + peer + "'", Error{EACCES, "a replicate request in the name of '" + request->from + "'"});
        break;
      }
      const uint32_t accepted = replicas_.accept(std::move(*request));
      sent = send_kv_peer_frame(fd.get(), KvPeerType::kReplicateReply, frame->header.id,
                                encode_replicate_reply({accepted}));
    } else if (frame->header.type == KvPeerType::kCard) {
      const std::string card = fabric_.card();
      sent = send_kv_peer_frame(fd.get(), KvPeerType::kCardReply, frame->header.id,
                                std::as_bytes(std::span(card.data(), card.size())));
    } else {
      log->warn("KV peer: a {} message is no request", static_cast<unsigned>(frame->header.type));
      break;
    }
    if (!sent) break;
  }
  std::vector<proto::KvKey> left;
  for (const auto& [id, held] : pins) left.push_back(held.key);
  unpin(std::move(left));
  --live_connections_;
}

// ---------------------------------------------------------------- reader

bool PodKv::has_peers() const {
  for (const PodMember& m : members_()) {
    if (m.host != self_ && !m.address.empty()) return true;
  }
  return false;
}

void PodKv::register_view(uint32_t ns_id, kvcache::KvTier tier, std::span<std::byte> bytes) {
  fabric_.register_region(kv_view_region_key(ns_id, tier), bytes.data(), bytes.size());
}

void PodKv::fetch(KvFetchJob job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      results_.push_back({job.ticket, {}});
    } else {
      jobs_.push_back(std::move(job));
    }
  }
  jobs_cv_.notify_one();
}

void PodKv::take_results(std::vector<KvFetchResult>& out) {
  std::lock_guard lock(mutex_);
  for (auto& r : results_) out.push_back(std::move(r));
  results_.clear();
}

void PodKv::fetch_loop() {
  std::vector<std::unique_ptr<Link>> links;  // this thread's own connections
  for (;;) {
    KvFetchJob job;
    {
      std::unique_lock lock(mutex_);
      jobs_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    KvFetchResult result = run_job(job, links);
    {
      std::lock_guard lock(mutex_);
      results_.push_back(std::move(result));
    }
    wake();
  }
}

KvFetchResult PodKv::run_job(const KvFetchJob& job, std::vector<std::unique_ptr<Link>>& links) {
  KvFetchResult result;
  result.ticket = job.ticket;
  // Readers spread over holders; a lookup's probe asks in the same order.
  // A copy for a peer's put starts at that holder.
  std::vector<PodMember> peers = kv_peer_walk(members_(), self_, job.keys.front());
  if (!job.holder.empty()) {
    const auto holder = std::find_if(peers.begin(), peers.end(), [&](const PodMember& m) { return m.host == job.holder; });
    if (holder != peers.end()) std::rotate(peers.begin(), holder, peers.end());
  }
  size_t have = 0;
  bool failed = false;
  for (size_t k = 0; k < peers.size() && have < job.keys.size() && !failed; ++k) {
    const PodMember& m = peers[k];
    auto it = std::find_if(links.begin(), links.end(), [&](const auto& l) { return l->host == m.host; });
    if (it == links.end()) {
      links.push_back(std::make_unique<Link>());
      it = std::prev(links.end());
      (*it)->host = m.host;
      secure_link(**it);
    }
    Link& link = **it;
    if (link.address != m.address) {  // a restarted peer may have moved
      link.address = m.address;
      link.fd.reset();
      link.peer.reset();
    }
    have += fetch_from(link, job, have, result, failed);
  }
  if (job.replica) {
    replicas_.copied(result.chunks.size(), job.keys.size());
    return result;
  }
  uint64_t bytes = 0;
  for (const auto& c : result.chunks) bytes += c.length;
  count([&](PodKvCounters& c) {
    ++c.gets;
    c.hits += result.chunks.size();
    c.bytes += bytes;
    if (result.chunks.empty()) ++c.misses;
  });
  return result;
}

size_t PodKv::fetch_from(Link& link, const KvFetchJob& job, size_t from, KvFetchResult& result, bool& failed) {
  hal::Transport* transport = fabric_.transport();
  auto note_error = [&](const std::string& what) {
    count([](PodKvCounters& c) { ++c.errors; });
    fabric_.count(link.host, [](PodPeerCounters& c) { ++c.fetch_errors; });
    if (what != link.last_warning) logger("pod")->warn("KV fetch from '{}': {}", link.host, what);
    link.last_warning = what;
  };
  auto refresh_card = [&]() -> bool {
    auto frame = link.exchange(KvPeerType::kCard, {}, KvPeerType::kCardReply);
    if (!frame) {
      note_error(frame.error().message);
      return false;
    }
    auto card = decode_card_reply(frame->body);
    auto peer = card ? fabric_.peer(link.host, *card) : Result<hal::PeerId>(tl::unexpected(card.error()));
    if (!peer) {
      note_error(peer.error().message);
      return false;
    }
    link.peer = *peer;
    return true;
  };
  if (transport == nullptr) return 0;
  // A new connection may reach a restarted peer, whose transport is a new
  // one: its card is fetched again on every connection.
  if (!link.fd) link.peer.reset();
  if (!link.peer && !refresh_card()) return 0;

  KvPinRequest pin;
  pin.from = self_;
  pin.fp = job.fp;
  const size_t asked = std::min(job.keys.size() - from, kMaxPinKeys);
  pin.keys.assign(job.keys.begin() + static_cast<std::ptrdiff_t>(from),
                  job.keys.begin() + static_cast<std::ptrdiff_t>(from + asked));
  auto frame = link.exchange(KvPeerType::kPin, encode_pin_request(pin), KvPeerType::kPinReply);
  if (!frame) {
    note_error(frame.error().message);
    return 0;
  }
  auto reply = decode_pin_reply(frame->body, asked, slot_bytes_);
  if (!reply) {
    link.fd.reset();
    note_error(reply.error().message);
    return 0;
  }
  const size_t m = reply->entries.size();
  if (m == 0) return 0;

  std::vector<hal::TransferRequest> reads(m);
  auto plan = [&] {
    for (size_t i = 0; i < m; ++i) {
      const KvPinEntry& e = reply->entries[i];
      reads[i] = {.op = hal::TransferOp::kRead,
                  .peer = *link.peer,
                  .local_key = kv_view_region_key(job.ns_id, kvcache::KvTier::kDram),
                  .local_offset = job.offsets[from + i],
                  .remote_key = e.region_key,
                  .remote_offset = e.offset,
                  .length = e.length};
    }
  };
  plan();
  std::vector<hal::TransferResult> done = transport->transfer(reads);
  // A region the card we have does not list (a namespace the holder opened
  // since): fetch its card and read again.
  const bool unknown_region = std::any_of(done.begin(), done.end(), [](const auto& r) { return r.error == ENOENT; });
  if (unknown_region && refresh_card()) {
    plan();
    done = transport->transfer(reads);
  }
  size_t got = 0;
  uint64_t retries = 0, bytes = 0;
  for (size_t i = 0; i < m; ++i) {
    const KvPinEntry& e = reply->entries[i];
    retries += done[i].retries;
    if (done[i].error != 0) {
      note_error("read of " + std::to_string(e.length) + " bytes: " + done[i].message);
      failed = true;
      link.peer.reset();  // the next fetch takes the card afresh
      break;
    }
    // The chunk's own checksum, as the holder has it: a read that raced a
    // pin's expiry or landed short never gets indexed.
    const uint32_t crc = crc32c({job.slots[from + i], e.length});
    if (crc != e.crc) {
      note_error("a chunk's CRC-32C differs from the holder's");
      failed = true;
      break;
    }
    result.chunks.push_back({e.length, crc});
    bytes += e.length;
    ++got;
  }
  fabric_.count(link.host, [&](PodPeerCounters& c) {
    c.fetched_chunks += got;
    c.fetched_bytes += bytes;
    c.retries += retries;
  });
  KvUnpinRequest unpin;
  for (const KvPinEntry& e : reply->entries) unpin.pin_ids.push_back(e.pin_id);
  if (auto ok = link.exchange(KvPeerType::kUnpin, encode_unpin_request(unpin), KvPeerType::kUnpinReply); !ok) {
    // The holder lets the pins go with the connection (or after its timeout).
    note_error(ok.error().message);
  }
  return got;
}

}  // namespace cxlpool::daemon
