// SPDX-License-Identifier: Apache-2.0
#include "ofi_transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <shared_mutex>
#include <unordered_map>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/common/log.hpp"
#include "cxlpool/hal/driver/rail_health.hpp"
#include "cxlpool/hal/driver/transfer_plan.hpp"
#include "cxlpool/hal/driver/transfer_wire.hpp"
#include "cxlpool/hal/driver/transport_driver.hpp"
#include "ofi_check_workers.hpp"
#include "ofi_defaults.hpp"
#include "ofi_rail.hpp"
#include "ofi_shm_sweep.hpp"

namespace cxlpool::drivers::ofi {
namespace {

using hal::ChunkFailure;
using hal::TransferOp;
using hal::WireEntry;
using hal::WireMessage;
using hal::WireType;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kShmProvider = "shm";
constexpr std::uint64_t kMessageTag = 1ull << 63;
// Empty reads of the rails' queues a waiting caller makes before it sleeps,
// for batches small enough that a wake-up costs more than their bytes;
// larger ones leave the processors to the rails' threads.
constexpr int kWaiterSpins = 200;
constexpr std::uint64_t kSpinBatchBytes = 64 << 10;
// Threads serving peers' checksum and verify requests (ofi_check_workers.hpp):
// one CRC-32C thread keeps up with a rail several times over; two let a
// check of one peer's batch run beside another's.
constexpr std::size_t kCheckThreads = 2;
// A request checking at most this many bytes is answered on the rail's own
// thread: its CRC-32C takes a few microseconds, less than waking a check
// thread would add to a small read's round trip.
constexpr std::uint64_t kInlineCheckBytes = 64 << 10;
int initial_spins(std::uint64_t batch_bytes) { return batch_bytes <= kSpinBatchBytes ? 0 : kWaiterSpins; }

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id.empty() ? "unknown-host" : id;
}

std::uint32_t crc_of(const std::byte* p, std::size_t n) { return crc32c(std::span<const std::byte>(p, n)); }

struct Region {
  std::byte* base = nullptr;
  std::uint64_t length = 0;
};

struct Peer {
  hal::PeerCard card;
  std::unordered_map<std::uint64_t, hal::CardRegion> regions;
  std::vector<std::uint32_t> rails;                 // local rails that reach it
  std::map<std::uint32_t, std::vector<std::byte>> names;  // its address on each of them
  // Its provider's keys on the rails whose provider picks them: local rail
  // -> region key -> the key to name in one-sided operations.
  std::map<std::uint32_t, std::unordered_map<std::uint64_t, std::uint64_t>> keys;
};

class OfiTransport;

// One transfer() call: its chunks, the control messages of the current
// round, and what has completed.
class Batch final : public OpSink {
 public:
  struct Chunk {
    std::size_t request = 0;
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
    std::uint32_t rail = 0;
    std::uint32_t attempts = 0;
    bool done = false;  // succeeded or its request failed
    // This round:
    bool data_done = false;
    int data_status = 0;
    bool check_done = false;
    int check_status = 0;  // the owner's status, or why there was no answer
    bool check_timeout = false;
    std::uint32_t crc_local = 0, crc_remote = 0;
    bool overdue = false;
    // Where a read chunk lands (set before it is posted, read by op_done).
    std::byte* read_into = nullptr;
  };
  struct Message {
    std::uint64_t id = 0;
    std::uint32_t rail = 0;
    std::vector<std::size_t> chunks;
    bool send_done = false;
    int send_status = 0;
    bool reply_done = false;
  };

  void op_done(std::uint64_t tag, int status) override {
    // A chunk read is checksummed as it lands, on the thread that saw it
    // land, while the others are still on their way.
    std::uint32_t crc = 0;
    const bool read_done = !(tag & kMessageTag) && status == 0 && chunks_[tag].read_into != nullptr;
    if (read_done) crc = crc32c(std::span<const std::byte>(chunks_[tag].read_into, chunks_[tag].length));
    std::lock_guard guard(mu_);
    if (tag & kMessageTag) {
      Message& m = messages_[tag & ~kMessageTag];
      if (m.send_done) return;
      m.send_done = true;
      m.send_status = status;
      if (status != 0) fail_message(m, status, false);
    } else {
      Chunk& c = chunks_[tag];
      if (c.data_done) return;
      c.data_done = true;
      c.data_status = status;
      if (read_done) c.crc_local = crc;
    }
    cv_.notify_all();
  }

  void reply(std::size_t index, const std::vector<WireEntry>& entries) {
    std::lock_guard guard(mu_);
    Message& m = messages_[index];
    if (m.reply_done) return;
    m.reply_done = true;
    for (std::size_t i = 0; i < m.chunks.size(); ++i) {
      Chunk& c = chunks_[m.chunks[i]];
      c.check_done = true;
      if (i >= entries.size()) {
        c.check_status = EPROTO;
        continue;
      }
      c.check_status = static_cast<int>(entries[i].status);
      c.crc_remote = entries[i].crc;
    }
    cv_.notify_all();
  }

  // Under mu_: the message will get no answer.
  void fail_message(Message& m, int status, bool timeout) {
    m.reply_done = true;
    for (std::size_t i : m.chunks) {
      Chunk& c = chunks_[i];
      if (c.check_done) continue;
      c.check_done = true;
      c.check_status = status;
      c.check_timeout = timeout;
    }
  }

  std::uint64_t bytes() const {
    std::uint64_t n = 0;
    for (const Chunk& c : chunks_) n += c.length;
    return n;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Chunk> chunks_;
  std::vector<Message> messages_;
};

class OfiTransport final : public hal::Transport {
 public:
  explicit OfiTransport(const hal::TransportOptions& options)
      : options_(options),
        host_id_(options.host_id.empty() ? boot_id() : options.host_id),
        instance_(std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32)),
        health_(0, options.rail_retry_after) {}

  ~OfiTransport() override {
    // The check threads answer on the rails: they end first. Then the
    // rails, whose threads deliver messages to this object.
    checks_.stop();
    rails_.clear();
  }

  Result<void> open() {
    auto handler = [this](Rail& rail, std::span<const std::byte> bytes) { on_message(rail, bytes); };
    if (options_.rails.empty()) {
      auto rail = Rail::open(options_.provider, nullptr, 0, handler);
      if (!rail) return tl::unexpected(rail.error());
      rails_.push_back(std::move(*rail));
    }
    for (const std::string& address : options_.rails) {
      auto rail = Rail::open(options_.provider, address.c_str(), static_cast<std::uint32_t>(rails_.size()), handler);
      if (!rail) return tl::unexpected(rail.error());
      rails_.push_back(std::move(*rail));
    }
    network_rails_ = static_cast<std::uint32_t>(rails_.size());
    if (options_.shm) {
      // What killed daemons left (the provider's regions live in /dev/shm).
      if (const std::size_t swept = remove_dead_shm_endpoints("/dev/shm"); swept != 0) {
        cxlpool::log(LogLevel::kNotice, "transport/ofi",
                     "removed " + std::to_string(swept) + " shm endpoint region(s) of processes that are gone");
      }
      // shm names its endpoint after the node given: one per transport.
      const std::string name = shm_endpoint_name(::getpid(), instance_ & 0xffffffu);
      auto rail = Rail::open(std::string(kShmProvider), name.c_str(), network_rails_, handler);
      // No shm provider (or no /dev/shm): peers on this host use the network.
      if (rail) rails_.push_back(std::move(*rail));
    }
    health_ = hal::RailHealth(static_cast<std::uint32_t>(rails_.size()), options_.rail_retry_after);
    return {};
  }

  const char* backend_name() const override { return "ofi"; }

  Result<void> register_region(std::uint64_t key, void* base, std::uint64_t length) override {
    if (base == nullptr || length == 0) return fail(EINVAL, "register_region: empty range");
    std::unique_lock lock(regions_mu_);
    if (regions_.contains(key)) return fail(EEXIST, "register_region: key " + std::to_string(key) + " is in use");
    for (std::size_t i = 0; i < rails_.size(); ++i) {
      if (auto ok = rails_[i]->register_memory(key, base, length); !ok) {
        for (std::size_t j = 0; j < i; ++j) rails_[j]->unregister_memory(key);
        return ok;
      }
    }
    regions_[key] = Region{static_cast<std::byte*>(base), length};
    return {};
  }

  Result<void> unregister_region(std::uint64_t key) override {
    std::unique_lock lock(regions_mu_);
    if (regions_.erase(key) == 0) return fail(ENOENT, "unregister_region: no region " + std::to_string(key));
    for (auto& rail : rails_) rail->unregister_memory(key);
    return {};
  }

  std::string card() const override {
    hal::PeerCard card;
    card.instance = instance_;
    card.host_id = host_id_;
    for (const auto& rail : rails_) card.rails.push_back({rail->provider(), rail->name()});
    std::shared_lock lock(regions_mu_);
    for (const auto& [key, region] : regions_) {
      card.regions.push_back({key, reinterpret_cast<std::uint64_t>(region.base), region.length});
    }
    std::sort(card.regions.begin(), card.regions.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    for (std::uint32_t i = 0; i < rails_.size(); ++i) {
      if (!rails_[i]->provider_keys()) continue;
      for (const auto& region : card.regions) card.rail_keys.push_back({region.key, i, rails_[i]->provider_key(region.key)});
    }
    return hal::encode_peer_card(card);
  }

  Result<hal::PeerId> add_peer(std::string_view text) override {
    auto card = hal::decode_peer_card(text);
    if (!card) return tl::unexpected(card.error());
    Peer peer;
    for (const auto& region : card->regions) peer.regions[region.key] = region;
    const bool same_host = card->host_id == host_id_;
    // The card's index of each local rail used.
    std::map<std::uint32_t, std::uint32_t> card_index;
    if (same_host && network_rails_ < rails_.size()) {
      for (std::uint32_t j = 0; j < card->rails.size(); ++j) {
        if (card->rails[j].provider == kShmProvider) {
          peer.rails.push_back(network_rails_);
          peer.names[network_rails_] = card->rails[j].address;
          card_index[network_rails_] = j;
        }
      }
    }
    if (peer.rails.empty()) {
      // Rail i here talks to the peer's i-th network rail.
      std::uint32_t i = 0;
      for (std::uint32_t j = 0; j < card->rails.size(); ++j) {
        const auto& rail = card->rails[j];
        if (rail.provider == kShmProvider) continue;
        if (i >= network_rails_) break;
        if (rail.provider != rails_[i]->provider()) {
          return fail(EINVAL, "add_peer: its rail " + std::to_string(i) + " is " + rail.provider + ", ours " +
                                  rails_[i]->provider());
        }
        peer.rails.push_back(i);
        peer.names[i] = rail.address;
        card_index[i] = j;
        ++i;
      }
    }
    for (const auto& k : card->rail_keys) {
      for (const auto& [local, j] : card_index) {
        if (j == k.rail) peer.keys[local][k.region] = k.key;
      }
    }
    // Where our provider names memory by its own keys, the peer's (being
    // the same provider) do too: without them nothing could be addressed.
    for (std::uint32_t local : peer.rails) {
      if (!rails_[local]->provider_keys()) continue;
      for (const auto& region : card->regions) {
        if (!peer.keys[local].contains(region.key)) {
          return fail(EINVAL, "add_peer: no key of region " + std::to_string(region.key) + " for rail " +
                                  std::to_string(local) + " (" + rails_[local]->provider() + ")");
        }
      }
    }
    if (peer.rails.empty()) return fail(EHOSTUNREACH, "add_peer: no rail of ours reaches it");
    peer.card = std::move(*card);
    std::unique_lock lock(peers_mu_);
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      if (peers_[i].card.instance == peer.card.instance) {
        peers_[i] = std::move(peer);
        return static_cast<hal::PeerId>(i);
      }
    }
    peers_.push_back(std::move(peer));
    return static_cast<hal::PeerId>(peers_.size() - 1);
  }

  std::vector<hal::TransferResult> transfer(std::span<const hal::TransferRequest> requests) override;

  std::vector<hal::RailStatus> rails() const override {
    std::vector<hal::RailStatus> out;
    std::lock_guard guard(health_mu_);
    for (const auto& rail : rails_) {
      hal::RailStatus s;
      s.provider = rail->provider();
      s.address = rail->printable_name();
      s.up = rail->up() && health_.in_service(rail->index());
      auto& c = rail->counters();
      s.bytes_read = c.bytes_read;
      s.bytes_written = c.bytes_written;
      s.chunks = c.chunks;
      s.failures = c.failures;
      s.resets = c.resets;
      out.push_back(std::move(s));
    }
    return out;
  }

  hal::TransportStats stats() const override {
    hal::TransportStats s;
    s.requests = requests_;
    s.requests_failed = requests_failed_;
    s.chunks_retried = chunks_retried_;
    s.checksum_mismatches = checksum_mismatches_;
    s.served_checks = served_checks_;
    return s;
  }

 private:
  void on_message(Rail& rail, std::span<const std::byte> bytes);
  void serve_check(Rail& rail, const WireMessage& request);
  void run_round(Batch& batch, const std::vector<std::size_t>& pending, std::span<const hal::TransferRequest> requests);
  void send_messages(Batch& batch, WireType type, const std::vector<std::size_t>& chunks,
                     std::span<const hal::TransferRequest> requests);
  // Waits until every data operation of `chunks` has ended (data) or every
  // check has an answer (checks), resetting rails that stall.
  void wait_round(Batch& batch, const std::vector<std::size_t>& chunks, bool checks, Clock::time_point start);
  void wait_sends(Batch& batch, Clock::time_point start);
  void drive_or_sleep(Batch& batch, std::unique_lock<std::mutex>& lock, const std::vector<std::uint32_t>& rails,
                      int* spins);
  void fail_rail(std::uint32_t rail);

  hal::TransportOptions options_;
  std::string host_id_;
  std::uint64_t instance_;
  std::vector<std::unique_ptr<Rail>> rails_;
  std::uint32_t network_rails_ = 0;

  mutable std::mutex health_mu_;
  hal::RailHealth health_;

  mutable std::shared_mutex regions_mu_;
  std::unordered_map<std::uint64_t, Region> regions_;

  mutable std::shared_mutex peers_mu_;
  std::vector<Peer> peers_;

  std::mutex pending_mu_;
  std::unordered_map<std::uint64_t, std::pair<Batch*, std::size_t>> pending_;
  std::atomic<std::uint64_t> next_id_{1};

  std::atomic<std::uint64_t> requests_{0}, requests_failed_{0}, chunks_retried_{0}, checksum_mismatches_{0},
      served_checks_{0};

  CheckWorkers checks_{kCheckThreads};
};

void OfiTransport::on_message(Rail& rail, std::span<const std::byte> bytes) {
  auto message = hal::decode_message(bytes);
  if (!message) return;  // not ours, or damaged: nobody to answer
  if (message->type == WireType::kChecksumReply || message->type == WireType::kVerifyReply) {
    std::lock_guard guard(pending_mu_);
    auto it = pending_.find(message->id);
    if (it == pending_.end()) return;  // late: its batch gave up on it
    it->second.first->reply(it->second.second, message->entries);
    pending_.erase(it);
    return;
  }
  // The owner's side: checksums of its own memory, where the written bytes
  // landed or whence the read ones came. Large ones go to a check thread so
  // that this rail's thread goes on moving data meanwhile. Once the
  // transport is closing there is no thread left: the request goes
  // unanswered, as if it had been lost.
  std::uint64_t checked = 0;
  for (const WireEntry& e : message->entries) checked += e.length;
  if (checked <= kInlineCheckBytes) {
    serve_check(rail, *message);
    return;
  }
  (void)checks_.post([this, &rail, request = std::move(*message)] { serve_check(rail, request); });
}

void OfiTransport::serve_check(Rail& rail, const WireMessage& request) {
  WireMessage reply;
  reply.type = request.type == WireType::kChecksumRequest ? WireType::kChecksumReply : WireType::kVerifyReply;
  reply.id = request.id;
  {
    std::shared_lock lock(regions_mu_);
    for (const WireEntry& e : request.entries) {
      WireEntry out;
      auto it = regions_.find(e.key);
      if (it == regions_.end()) {
        out.status = ENOENT;
      } else if (e.offset > it->second.length || e.length > it->second.length - e.offset) {
        out.status = ERANGE;
      } else {
        out.crc = crc_of(it->second.base + e.offset, e.length);
        if (request.type == WireType::kVerifyRequest && out.crc != e.crc) out.status = EIO;
      }
      reply.entries.push_back(out);
    }
  }
  served_checks_++;
  auto addr = rail.peer_address(request.reply_to);
  if (!addr) return;
  (void)rail.post_send(hal::encode_message(reply), *addr, nullptr, 0);
}

void OfiTransport::fail_rail(std::uint32_t rail) {
  {
    std::lock_guard guard(health_mu_);
    health_.take_down(rail, Clock::now());
  }
  rails_[rail]->reset();
}

void OfiTransport::send_messages(Batch& batch, WireType type, const std::vector<std::size_t>& chunks,
                                 std::span<const hal::TransferRequest> requests) {
  // One message per (peer, rail) and at most kMaxWireEntries chunks: a
  // rail's message follows that rail's data, in order.
  std::map<std::pair<hal::PeerId, std::uint32_t>, std::vector<std::size_t>> groups;
  for (std::size_t i : chunks) {
    const auto& c = batch.chunks_[i];
    groups[{requests[c.request].peer, c.rail}].push_back(i);
  }
  for (auto& [where, members] : groups) {
    for (std::size_t first = 0; first < members.size(); first += hal::kMaxWireEntries) {
      const std::size_t last = std::min(members.size(), first + hal::kMaxWireEntries);
      WireMessage m;
      m.type = type;
      m.id = next_id_++;
      Rail& rail = *rails_[where.second];
      m.reply_to = rail.name();
      std::size_t index;
      {
        std::lock_guard guard(batch.mu_);
        index = batch.messages_.size();
        Batch::Message msg;
        msg.id = m.id;
        msg.rail = where.second;
        msg.chunks.assign(members.begin() + static_cast<std::ptrdiff_t>(first),
                          members.begin() + static_cast<std::ptrdiff_t>(last));
        for (std::size_t i : msg.chunks) {
          const auto& c = batch.chunks_[i];
          const auto& r = requests[c.request];
          m.entries.push_back({r.remote_key, r.remote_offset + c.offset, c.length, c.crc_local, 0});
        }
        batch.messages_.push_back(std::move(msg));
      }
      {
        std::lock_guard guard(pending_mu_);
        pending_[m.id] = {&batch, index};
      }
      Result<fi_addr_t> addr = fail(ENOENT, "no peer");
      {
        std::shared_lock lock(peers_mu_);
        addr = rail.peer_address(peers_[where.first].names.at(where.second));
      }
      Result<void> sent = addr ? rail.post_send(hal::encode_message(m), *addr, &batch, kMessageTag | index)
                               : Result<void>(tl::unexpected(addr.error()));
      if (!sent) batch.op_done(kMessageTag | index, sent.error().code == ENETDOWN ? ENETDOWN : EIO);
    }
  }
}

void OfiTransport::wait_round(Batch& batch, const std::vector<std::size_t>& chunks, bool checks,
                              Clock::time_point start) {
  std::uint64_t bytes = 0;
  for (std::size_t i : chunks) bytes += batch.chunks_[i].length;
  int spins = initial_spins(bytes);
  while (true) {
    std::vector<std::uint32_t> stalled;
    {
      std::unique_lock lock(batch.mu_);
      bool all = true;
      std::vector<std::uint32_t> waiting_rails;
      for (std::size_t i : chunks) {
        const auto& c = batch.chunks_[i];
        const bool done = checks ? c.check_done : c.data_done;
        if (!done) {
          all = false;
          waiting_rails.push_back(c.rail);
        }
      }
      if (all) return;
      const Clock::time_point now = Clock::now();
      std::sort(waiting_rails.begin(), waiting_rails.end());
      waiting_rails.erase(std::unique(waiting_rails.begin(), waiting_rails.end()), waiting_rails.end());
      for (std::uint32_t r : waiting_rails) {
        // A rail that still completes operations is slow, not stalled.
        const Clock::time_point since = std::max(start, rails_[r]->last_progress());
        if (now - since > options_.op_timeout) stalled.push_back(r);
      }
      if (stalled.empty()) {
        drive_or_sleep(batch, lock, waiting_rails, &spins);
        continue;
      }
      for (std::size_t i : chunks) {
        auto& c = batch.chunks_[i];
        if (std::find(stalled.begin(), stalled.end(), c.rail) != stalled.end()) c.overdue = true;
      }
      // Answers that will not come: their messages went on a stalled rail.
      for (auto& m : batch.messages_) {
        if (!m.reply_done && std::find(stalled.begin(), stalled.end(), m.rail) != stalled.end()) {
          batch.fail_message(m, ETIMEDOUT, true);
        }
      }
    }
    // Outside the batch's lock: a reset ends its operations through op_done.
    for (std::uint32_t r : stalled) fail_rail(r);
  }
}

void OfiTransport::run_round(Batch& batch, const std::vector<std::size_t>& pending,
                             std::span<const hal::TransferRequest> requests) {
  const Clock::time_point start = Clock::now();
  std::vector<std::size_t> reads, writes;
  {
    std::lock_guard guard(batch.mu_);
    for (std::size_t i : pending) {
      auto& c = batch.chunks_[i];
      c.data_done = c.check_done = c.overdue = c.check_timeout = false;
      c.data_status = c.check_status = 0;
      c.attempts++;
      (requests[c.request].op == TransferOp::kRead ? reads : writes).push_back(i);
    }
  }
  // A rail out of service whose time has come is opened again on demand.
  for (std::size_t i : pending) {
    Rail& rail = *rails_[batch.chunks_[i].rail];
    if (!rail.up()) (void)rail.reopen();
  }
  // Writes on a rail that keeps messages behind earlier writes are
  // verified as they go: each request's verify messages follow its writes
  // at once, so the owner checks one request while the next one's bytes
  // are still arriving. Other rails' writes are verified once they
  // completed (below).
  std::vector<std::size_t> verified_early, request_writes;
  const auto send_request_verifies = [&] {
    if (request_writes.empty()) return;
    send_messages(batch, WireType::kVerifyRequest, request_writes, requests);
    verified_early.insert(verified_early.end(), request_writes.begin(), request_writes.end());
    request_writes.clear();
  };
  for (std::size_t i : pending) {
    auto& c = batch.chunks_[i];
    const auto& r = requests[c.request];
    Rail& rail = *rails_[c.rail];
    if (!request_writes.empty() && batch.chunks_[request_writes.front()].request != c.request) send_request_verifies();
    Result<fi_addr_t> addr = fail(ENOENT, "");
    std::uint64_t remote = 0;
    std::uint64_t remote_key = r.remote_key;
    {
      std::shared_lock lock(peers_mu_);
      const Peer& peer = peers_[r.peer];
      addr = rail.peer_address(peer.names.at(c.rail));
      remote = (rail.virtual_addressing() ? peer.regions.at(r.remote_key).base : 0) + r.remote_offset + c.offset;
      if (auto keys = peer.keys.find(c.rail); keys != peer.keys.end()) remote_key = keys->second.at(r.remote_key);
    }
    std::byte* local;
    {
      std::shared_lock lock(regions_mu_);
      local = regions_.at(r.local_key).base + r.local_offset + c.offset;
    }
    Result<void> posted = tl::unexpected(addr ? Error{} : addr.error());
    if (addr) {
      if (r.op == TransferOp::kRead) {
        c.read_into = local;
        posted = rail.post_read(local, c.length, r.local_key, *addr, remote, remote_key, &batch, i);
      } else {
        c.crc_local = crc_of(local, c.length);
        posted = rail.post_write(local, c.length, r.local_key, *addr, remote, remote_key, &batch, i);
        if (posted && rail.send_after_write()) request_writes.push_back(i);
      }
    }
    if (!posted) batch.op_done(i, posted.error().code == ENETDOWN ? ENETDOWN : EIO);
  }
  send_request_verifies();
  // Readers ask for the owner's checksums while their reads run.
  if (!reads.empty()) send_messages(batch, WireType::kChecksumRequest, reads, requests);
  wait_round(batch, pending, false, start);
  if (!reads.empty()) wait_round(batch, reads, true, start);
  if (!verified_early.empty()) wait_round(batch, verified_early, true, start);
  // Writers on the other rails ask the owner to check what landed, once it
  // has.
  std::sort(verified_early.begin(), verified_early.end());
  std::erase_if(writes, [&](std::size_t i) { return std::binary_search(verified_early.begin(), verified_early.end(), i); });
  std::vector<std::size_t> written;
  {
    std::lock_guard guard(batch.mu_);
    for (std::size_t i : writes) {
      auto& c = batch.chunks_[i];
      if (c.data_status == 0) {
        written.push_back(i);
      } else {
        c.check_done = true;
        c.check_status = c.data_status;
      }
    }
  }
  if (!written.empty()) {
    send_messages(batch, WireType::kVerifyRequest, written, requests);
    wait_round(batch, written, true, Clock::now());
  }
  wait_sends(batch, start);
  // Drop the ids of answers that never came.
  std::lock_guard guard(pending_mu_);
  for (const auto& m : batch.messages_) pending_.erase(m.id);
}

void OfiTransport::drive_or_sleep(Batch& batch, std::unique_lock<std::mutex>& lock,
                                  const std::vector<std::uint32_t>& rails, int* spins) {
  // Drive the rails from this thread for a while (one wake-up less per
  // round trip than leaving it to their threads, which may be napping),
  // then sleep until their threads say something ended.
  if (*spins < kWaiterSpins) {
    lock.unlock();
    int moved = 0;
    for (std::uint32_t r : rails) moved += rails_[r]->progress();
    lock.lock();
    *spins = moved > 0 ? 0 : *spins + 1;
  } else {
    batch.cv_.wait_for(lock, std::chrono::milliseconds(2));
  }
}

void OfiTransport::wait_sends(Batch& batch, Clock::time_point start) {
  // A reply may overtake its request's own send completion: the batch
  // must outlive every operation that names it.
  int spins = initial_spins(batch.bytes());
  while (true) {
    std::vector<std::uint32_t> stalled;
    {
      std::unique_lock lock(batch.mu_);
      bool all = true;
      std::vector<std::uint32_t> waiting_rails;
      const Clock::time_point now = Clock::now();
      for (const auto& m : batch.messages_) {
        if (m.send_done) continue;
        all = false;
        waiting_rails.push_back(m.rail);
        if (now - std::max(start, rails_[m.rail]->last_progress()) > options_.op_timeout) stalled.push_back(m.rail);
      }
      if (all) return;
      if (stalled.empty()) {
        std::sort(waiting_rails.begin(), waiting_rails.end());
        waiting_rails.erase(std::unique(waiting_rails.begin(), waiting_rails.end()), waiting_rails.end());
        drive_or_sleep(batch, lock, waiting_rails, &spins);
        continue;
      }
    }
    std::sort(stalled.begin(), stalled.end());
    stalled.erase(std::unique(stalled.begin(), stalled.end()), stalled.end());
    for (std::uint32_t r : stalled) fail_rail(r);
  }
}

std::vector<hal::TransferResult> OfiTransport::transfer(std::span<const hal::TransferRequest> requests) {
  std::vector<hal::TransferResult> results(requests.size());
  requests_ += requests.size();
  Batch batch;
  // Requests that are fine to run, grouped by peer.
  std::map<hal::PeerId, std::vector<std::size_t>> by_peer;
  {
    std::shared_lock peers(peers_mu_);
    std::shared_lock regions(regions_mu_);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const auto& r = requests[i];
      auto& out = results[i];
      auto local = regions_.find(r.local_key);
      if (r.length == 0) {
        out = {EINVAL, "request of length 0"};
      } else if (r.peer >= peers_.size()) {
        out = {EINVAL, "no peer " + std::to_string(r.peer)};
      } else if (local == regions_.end()) {
        out = {ENOENT, "no local region " + std::to_string(r.local_key)};
      } else if (r.local_offset > local->second.length || r.length > local->second.length - r.local_offset) {
        out = {ERANGE, "outside local region " + std::to_string(r.local_key)};
      } else {
        const Peer& peer = peers_[r.peer];
        auto remote = peer.regions.find(r.remote_key);
        if (remote == peer.regions.end()) {
          out = {ENOENT, "peer " + std::to_string(r.peer) + " has no region " + std::to_string(r.remote_key)};
        } else if (r.remote_offset > remote->second.length || r.length > remote->second.length - r.remote_offset) {
          out = {ERANGE, "outside region " + std::to_string(r.remote_key) + " of peer " + std::to_string(r.peer)};
        } else {
          by_peer[r.peer].push_back(i);
        }
      }
    }
    // Chunks striped over the rails that reach each peer.
    for (const auto& [peer_id, members] : by_peer) {
      std::vector<std::uint64_t> lengths;
      for (std::size_t i : members) lengths.push_back(requests[i].length);
      std::vector<std::uint32_t> rails;
      {
        std::lock_guard guard(health_mu_);
        rails = health_.usable_rails(peers_[peer_id].rails, Clock::now());
      }
      // Every rail out of service: try them all rather than give up unasked.
      if (rails.empty()) rails = peers_[peer_id].rails;
      for (const hal::ChunkPlan& p : hal::plan_chunks(lengths, options_.chunk_bytes, rails)) {
        Batch::Chunk c;
        c.request = members[p.request];
        c.offset = p.offset;
        c.length = p.length;
        c.rail = p.rail;
        batch.chunks_.push_back(c);
      }
    }
  }
  std::vector<std::size_t> pending(batch.chunks_.size());
  for (std::size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  while (!pending.empty()) {
    run_round(batch, pending, requests);
    std::vector<std::size_t> again;
    for (std::size_t i : pending) {
      auto& c = batch.chunks_[i];
      const auto& r = requests[c.request];
      auto& result = results[c.request];
      if (result.error != 0) {
        c.done = true;  // its request failed already
        continue;
      }
      std::optional<ChunkFailure> failure;
      int refused = 0;
      // The owner's refusal (no such region, out of range) is final
      // whatever became of the data.
      if (c.check_status == ENOENT || c.check_status == ERANGE) {
        failure = ChunkFailure::kRefused;
        refused = c.check_status;
      } else if (c.data_status != 0) {
        failure = c.overdue ? ChunkFailure::kTimeout : ChunkFailure::kCompletionError;
      } else if (c.check_status == EIO) {
        failure = ChunkFailure::kChecksumMismatch;
      } else if (c.check_status != 0) {
        failure = c.check_timeout || c.overdue ? ChunkFailure::kTimeout : ChunkFailure::kCompletionError;
      } else if (r.op == TransferOp::kRead && c.crc_local != c.crc_remote) {
        failure = ChunkFailure::kChecksumMismatch;
      }
      if (!failure) {
        c.done = true;
        auto& counters = rails_[c.rail]->counters();
        (r.op == TransferOp::kRead ? counters.bytes_read : counters.bytes_written) += c.length;
        std::lock_guard guard(health_mu_);
        health_.mark_up(c.rail);
        continue;
      }
      if (*failure == ChunkFailure::kChecksumMismatch) checksum_mismatches_++;
      std::vector<std::uint32_t> usable;
      {
        std::shared_lock peers(peers_mu_);
        std::lock_guard guard(health_mu_);
        usable = health_.usable_rails(peers_[r.peer].rails, Clock::now());
      }
      const hal::RetryDecision d =
          hal::decide_retry(*failure, c.attempts, options_.max_attempts, c.rail, usable, refused);
      if (d.take_rail_down) {
        std::lock_guard guard(health_mu_);
        health_.take_down(c.rail, Clock::now());
      }
      if (d.retry) {
        chunks_retried_++;
        result.retries++;
        c.rail = d.rail;
        again.push_back(i);
      } else {
        c.done = true;
        result.error = d.error;
        result.message = "bytes " + std::to_string(c.offset) + ".." + std::to_string(c.offset + c.length) +
                         " failed after " + std::to_string(c.attempts) + " attempt(s), the last on rail " +
                         std::to_string(c.rail) + ": " +
                         (*failure == ChunkFailure::kTimeout            ? "timed out"
                          : *failure == ChunkFailure::kChecksumMismatch ? "checksum mismatch"
                          : *failure == ChunkFailure::kRefused          ? "refused by the owner"
                                                                        : "completion error");
      }
    }
    // Chunks of a request that failed meanwhile need not go again.
    std::erase_if(again, [&](std::size_t i) { return results[batch.chunks_[i].request].error != 0; });
    pending = std::move(again);
  }
  for (const auto& r : results) {
    if (r.error != 0) requests_failed_++;
  }
  return results;
}

}  // namespace

Result<std::unique_ptr<hal::Transport>> open_transport(const hal::TransportOptions& options) {
  if (auto ok = hal::validate_transport_options(options); !ok) return tl::unexpected(ok.error());
  apply_libfabric_defaults();
  auto transport = std::make_unique<OfiTransport>(options);
  if (auto ok = transport->open(); !ok) return tl::unexpected(ok.error());
  return std::unique_ptr<hal::Transport>(std::move(transport));
}

}  // namespace cxlpool::drivers::ofi
