// SPDX-License-Identifier: Apache-2.0
#include "fake_kv_daemon.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/kvcache/namespace.hpp"
#include "cxlpool/proto/shm_ring.hpp"
#include "cxlpool/proto/socket_io.hpp"

namespace cxlpool::test {
namespace {

constexpr uint64_t kArenaBytes = FakeKvDaemon::kSlotBytes * FakeKvDaemon::kArenaSlots;
constexpr uint64_t kWindowBytes = FakeKvDaemon::kSlotBytes * FakeKvDaemon::kWindowSlots;

std::byte* make_memfd(const char* name, uint64_t bytes, UniqueFd& fd) {
  fd.reset(::memfd_create(name, MFD_CLOEXEC));
  if (!fd || ::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) throw std::runtime_error("memfd");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) throw std::runtime_error("mmap");
  return static_cast<std::byte*>(p);
}

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0;
}

}  // namespace

FakeKvDaemon::FakeKvDaemon() {
  socket_path_ = dir_.resolve("sock").string();
  listen_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path_.c_str(), sizeof addr.sun_path - 1);
  if (::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_.get(), 4) != 0) {
    throw std::runtime_error("bind/listen");
  }
  window_ = make_memfd("fake-kv-window", kWindowBytes, window_fd_);
  dram_ = make_memfd("fake-kv-dram", kArenaBytes, arena_fd_[0]);
  cxl_ = make_memfd("fake-kv-cxl", kArenaBytes, arena_fd_[1]);
  control_ = std::thread([this] { control_loop(); });
  data_ = std::thread([this] { data_loop(); });
}

FakeKvDaemon::~FakeKvDaemon() {
  stop_ = true;
  control_.join();
  data_.join();
  ::munmap(window_, kWindowBytes);
  ::munmap(dram_, kArenaBytes);
  ::munmap(cxl_, kArenaBytes);
}

void FakeKvDaemon::disconnect() {
  std::lock_guard lock(mutex_);
  if (conn_) ::shutdown(conn_.get(), SHUT_RDWR);
}

std::vector<std::byte> FakeKvDaemon::dram_slot(uint64_t slot, size_t bytes) {
  std::lock_guard lock(mutex_);
  const std::byte* p = dram_ + slot * kSlotBytes;
  return std::vector<std::byte>(p, p + bytes);
}

uint64_t FakeKvDaemon::leases_held() {
  std::lock_guard lock(mutex_);
  return leases_.size();
}

void FakeKvDaemon::control_loop() {
  while (!stop_ && !readable(listen_.get(), 20)) {
  }
  if (stop_) return;
  {
    std::lock_guard lock(mutex_);
    conn_.reset(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  }
  const int sock = conn_.get();
  while (!stop_) {
    if (!readable(sock, 20)) continue;
    auto received = proto::recv_message(sock);
    if (!received) break;  // the client left or we were told to vanish
    const uint32_t id = received->envelope.header.request_id;
    const proto::Message& m = received->envelope.message;
    if (std::holds_alternative<proto::Hello>(m)) {
      proto::HelloReply reply;
      reply.daemon_version = "fake";
      reply.client_id = 1;
      reply.max_regions = 16;
      (void)proto::send_message(sock, id, reply);
    } else if (std::holds_alternative<proto::KvOpen>(m)) {
      const proto::KvRingGeometry g{8, kCqEntries, 64 * 1024, 64 * 1024};
      std::lock_guard lock(mutex_);
      auto memory = proto::KvRingMemory::create(g);
      auto sq = proto::ring_eventfd();
      auto cq = proto::ring_eventfd();
      if (!memory || !sq || !cq) throw std::runtime_error("ring");
      ring_memory_ = std::move(*memory);
      sq_efd_ = std::move(*sq);
      cq_efd_ = std::move(*cq);
      auto ring = proto::KvDaemonRing::attach(ring_memory_.bytes(), g, sq_efd_.get(), cq_efd_.get());
      if (!ring) throw std::runtime_error("attach");
      ring_ = *ring;
      ring_ready_ = true;
      proto::KvOpenReply reply;
      reply.sq_entries = g.sq_entries;
      reply.cq_entries = g.cq_entries;
      reply.sq_slab_bytes = g.sq_slab_bytes;
      reply.cq_slab_bytes = g.cq_slab_bytes;
      reply.ring_bytes = proto::kv_ring_layout(g).total_bytes;
      reply.put_window_bytes = kWindowBytes;
      reply.slot_bytes = kSlotBytes;
      reply.tier_bandwidth_bps[0] = 20'000'000'000ull;
      reply.tier_latency_ns[0] = 100;
      reply.arenas = {{0, 0, kArenaBytes, "fake-kv-dram"}, {1, 1, kArenaBytes, "fake-kv-cxl"}};
      const int fds[4] = {ring_memory_.fd(), sq_efd_.get(), cq_efd_.get(), window_fd_.get()};
      (void)proto::send_message(sock, id, reply, fds);
    } else if (auto* ns = std::get_if<proto::KvNamespaceOpen>(&m)) {
      const auto fp = kvcache::fingerprint(
          kvcache::NamespaceSpec{ns->model_id, ns->layout, ns->dtype, ns->tp_rank, ns->tp_size, ns->chunk_tokens});
      // Namespace 5, readable and writable: its views are the two arenas.
      proto::KvNamespaceReply reply{5, fp.hi, fp.lo, ns->chunk_tokens, 1000, 1000, 0600, 3};
      const int fds[2] = {arena_fd_[0].get(), arena_fd_[1].get()};
      (void)proto::send_message(sock, id, reply, fds);
    } else {
      (void)proto::send_message(sock, id, proto::ErrorReply{ENOTSUP, "not in the fake"});
    }
  }
  std::lock_guard lock(mutex_);
  conn_.reset();
}

FakeKvDaemon::Answer FakeKvDaemon::handle(const proto::KvRequest& r, std::span<const proto::KvKey> keys) {
  Answer a;
  a.completion.request_id = r.request_id;
  a.completion.op = r.op;
  auto prefix = [&](std::vector<Key>* out) {
    for (const proto::KvKey& k : keys) {
      auto it = chunks_.find({k.lo, k.hi});
      if (it == chunks_.end()) break;
      a.locations.push_back({it->second.slot * kSlotBytes, it->second.length, 0, 0});
      if (out != nullptr) out->push_back(it->first);
    }
  };
  switch (static_cast<proto::KvOp>(r.op)) {
    case proto::KvOp::kLookup:
      prefix(nullptr);
      a.completion.result0 = a.locations.size();
      break;
    case proto::KvOp::kGet: {
      std::vector<Key> leased;
      prefix(&leased);
      if (!leased.empty()) {
        a.completion.result0 = next_id_++;
        leases_[a.completion.result0] = std::move(leased);
      }
      a.completion.result1 = a.locations.size();
      break;
    }
    case proto::KvOp::kRelease:
      if (leases_.erase(r.param0) == 1) {
        ++releases_ok;
      } else {
        a.completion.status = -ENOENT;
      }
      break;
    case proto::KvOp::kPutBegin: {
      if (r.param0 == 0 || r.param0 > kSlotBytes) {
        a.completion.status = -EMSGSIZE;
        break;
      }
      if (keys.size() > kWindowSlots) {
        a.completion.status = -EAGAIN;
        break;
      }
      const uint64_t id = next_id_++;
      auto& res = reservations_[id];
      for (size_t i = 0; i < keys.size(); ++i) {
        const Key k{keys[i].lo, keys[i].hi};
        if (chunks_.count(k) != 0) {
          a.locations.push_back({0, 0, proto::kKvLocationPutWindow, proto::kKvLocationCached});
          res.emplace_back(k, UINT64_MAX);
        } else {
          a.locations.push_back({i * kSlotBytes, static_cast<uint32_t>(r.param0), proto::kKvLocationPutWindow, 0});
          res.emplace_back(k, i);
        }
      }
      put_length_[id] = static_cast<uint32_t>(r.param0);
      a.completion.result0 = id;
      break;
    }
    case proto::KvOp::kPutCommit: {
      auto it = reservations_.find(r.param0);
      if (it == reservations_.end()) {
        a.completion.status = -ENOENT;
        break;
      }
      const bool declares = (r.flags & proto::kKvPutCommitChecksums) != 0;
      if (declares && !knows_checksums) {
        a.completion.status = -EINVAL;  // as a daemon that does not know the flag: the reservation stays
        break;
      }
      // Declared checksums follow the keys (param1 of them).
      const auto kept = declares ? keys.first(r.param1) : keys;
      const auto records = keys.subspan(kept.size());
      uint64_t committed = 0;
      for (size_t i = 0; i < kept.size(); ++i) {
        const proto::KvKey& k = kept[i];
        for (const auto& [key, wslot] : it->second) {
          if (key != Key{k.lo, k.hi} || wslot == UINT64_MAX) continue;
          const uint32_t length = put_length_[r.param0];
          if (declares && proto::kv_checksum_at(records, static_cast<uint32_t>(i)) !=
                              crc32c({reinterpret_cast<const std::byte*>(window_ + wslot * kSlotBytes), length})) {
            ++checksum_mismatches;
            continue;
          }
          const uint64_t slot = next_dram_slot_++ % kArenaSlots;
          std::memcpy(dram_ + slot * kSlotBytes, window_ + wslot * kSlotBytes, put_length_[r.param0]);
          chunks_[key] = Chunk{slot, put_length_[r.param0]};
          ++committed;
        }
      }
      reservations_.erase(it);
      a.completion.result0 = committed;
      last_commit_flags = r.flags;
      if ((r.flags & proto::kKvPutCommitToSsd) != 0 && ssd_log) a.completion.result1 = committed;
      break;
    }
    case proto::KvOp::kPrefetch:
      break;
    case proto::KvOp::kDelete:
      for (const proto::KvKey& k : keys) a.completion.result0 += chunks_.erase({k.lo, k.hi});
      break;
  }
  return a;
}

void FakeKvDaemon::data_loop() {
  proto::KvRequestBatch batch;
  while (!stop_) {
    std::unique_lock lock(mutex_);
    if (!ring_ready_) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    batch.clear();
    const size_t n = ring_.take(batch);
    auto publish = [&](Answer& a) {
      if (!a.locations.empty() && corrupt_next_location.exchange(false)) a.locations[0].offset = kArenaBytes;
      ++answered[a.completion.op & 7];
      (void)ring_.complete(a.completion, a.locations);
    };
    for (size_t i = 0; i < n; ++i) {
      const proto::KvRequest& r = batch.requests[i];
      if (batch.errors[i] != 0) {
        Answer a;
        a.completion.request_id = r.request_id;
        a.completion.op = r.op;
        a.completion.status = batch.errors[i];
        publish(a);
        continue;
      }
      if (ignore_op != 0 && r.op == ignore_op) continue;
      Answer a = handle(r, batch.keys_of(i));
      if (hold_op != 0 && r.op == hold_op && !holding_) {
        holding_ = true;
        held_.push_back(std::move(a));
        continue;
      }
      for (Answer& h : held_) publish(h);
      held_.clear();
      publish(a);
    }
    ring_.flush();
    lock.unlock();
    if (n != 0) continue;
    bool armed = false;
    {
      std::lock_guard relock(mutex_);
      armed = ring_.arm_wakeup();
    }
    if (!armed) continue;
    pollfd p{sq_efd_.get(), POLLIN, 0};
    (void)::poll(&p, 1, 5);
    uint64_t v = 0;
    (void)!::read(sq_efd_.get(), &v, sizeof v);
    std::lock_guard relock(mutex_);
    ring_.disarm_wakeup();
  }
}

}  // namespace cxlpool::test
