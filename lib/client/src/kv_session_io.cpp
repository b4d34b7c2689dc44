// SPDX-License-Identifier: Apache-2.0
// The data path: submitting requests, routing completions, waiting.
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstddef>
#include <string>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/log.hpp"
#include "kv_session.hpp"

namespace cxlpool::client {
namespace {

// Request ids: a blocking helper's have the top bit set (a counter below
// it); an asynchronous request's are generation << 32 | slot.
constexpr uint64_t kHelperBit = uint64_t{1} << 63;
// With kHelperBit: a release_nowait() that nobody waits for.
constexpr uint64_t kDetachedBit = uint64_t{1} << 62;
constexpr uint64_t kSlotMask = 0xffffffffu;
constexpr uint32_t kGenerationMask = 0x7fffffffu;
// While the rings are full a helper re-tries at least this often.
constexpr uint64_t kFullRetryNs = 1'000'000;

static_assert(sizeof(cxlpool_kv_key) == sizeof(proto::KvKey) &&
              offsetof(cxlpool_kv_key, lo) == offsetof(proto::KvKey, lo) &&
              offsetof(cxlpool_kv_key, hi) == offsetof(proto::KvKey, hi));

// The ring only memcpy()s the keys, so viewing the caller's array as the
// wire type (same layout, checked above) reads exactly its bytes.
std::span<const proto::KvKey> wire_keys(std::span<const cxlpool_kv_key> keys) {
  return {reinterpret_cast<const proto::KvKey*>(keys.data()), keys.size()};
}

constexpr uint8_t op_of(proto::KvOp op) { return static_cast<uint8_t>(op); }

// For the first microseconds of a spin the answer is usually on its way from
// a busy-polling daemon: wait without a system call. Past that, yield, in
// case the daemon shares this core; at once when the daemon said it last
// ran on this core (the ring header's hint), since it cannot answer while we
// spin.
constexpr uint64_t kQuietSpinNs = 5'000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

Result<void> KvSession::usable_locked() const {
  if (broken_) return fail(EPIPE, "the daemon broke the KV ring protocol; the handle is unusable");
  if (dead_) return fail(ENOTCONN, "connection to cxlpoold is closed");
  return {};
}

bool KvSession::translate(uint8_t op, uint64_t ns_id, const proto::KvLocation& in, cxlpool_kv_location& out) const {
  out = cxlpool_kv_location{nullptr, in.offset, in.length, in.tier, in.flags};
  auto inside = [&](const std::byte* base, uint64_t bytes) -> bool {
    if (base == nullptr || in.offset > bytes || in.length > bytes - in.offset) return false;
    out.data = const_cast<std::byte*>(base) + in.offset;
    return true;
  };
  const bool put_begin = op == op_of(proto::KvOp::kPutBegin);
  // Already stored: nothing is written, so no pointer to write through.
  if (put_begin && (in.flags & proto::kKvLocationCached) != 0) return true;
  switch (in.tier) {
    case 0:
    case 1:
      if (put_begin || ns_id >= views_.size()) return false;
      return inside(views_[ns_id].mapping[in.tier].data(), arena_bytes_[in.tier]);
    case 2:
      // Only a lookup may answer with a chunk that is not in memory.
      return op == op_of(proto::KvOp::kLookup);
    case proto::kKvLocationPutWindow:
      return put_begin && inside(put_window_.data(), put_window_.length());
    default:
      return false;
  }
}

void KvSession::forget_lease_locked(uint64_t lease) {
  for (size_t i = leases_.size(); i > 0; --i) {
    if (leases_[i - 1] == lease) {
      leases_[i - 1] = leases_.back();
      leases_.pop_back();
      return;
    }
  }
}

void KvSession::note_lease_result(uint8_t op, int32_t status, uint64_t param0, uint64_t result0) {
  if (op == op_of(proto::KvOp::kGet) && status == 0 && result0 != 0) {
    leases_.push_back(result0);
  } else if (op == op_of(proto::KvOp::kRelease) && (status == 0 || status == -ENOENT)) {
    forget_lease_locked(param0);
  }
}

bool KvSession::route_detached_locked(const proto::KvCompletion& c, size_t n_locations) {
  if (c.op != op_of(proto::KvOp::kRelease) || n_locations != 0) return false;
  for (size_t i = 0; i < detached_.size(); ++i) {
    if (detached_[i] == c.request_id) {
      detached_[i] = detached_.back();
      detached_.pop_back();
      return true;
    }
  }
  return false;
}

void KvSession::drain_locked() {
  if (broken_) return;
  scratch_.clear();
  const size_t n = ring_.reap(scratch_);
  bool routed = false;
  bool stashed = false;
  for (size_t i = 0; i < n && !broken_; ++i) {
    const proto::KvCompletion& c = scratch_.completions[i];
    const std::span<const proto::KvLocation> locations = scratch_.locations_of(i);
    if ((c.request_id & (kHelperBit | kDetachedBit)) == (kHelperBit | kDetachedBit)) {
      if (!route_detached_locked(c, locations.size())) {
        broken_ = true;
        break;
      }
    } else if ((c.request_id & kHelperBit) != 0) {
      KvWaiter* w = waiters_;
      while (w != nullptr && w->id != c.request_id) w = w->next;
      if (w == nullptr || w->done || w->op != c.op || locations.size() > w->capacity) {
        broken_ = true;
        break;
      }
      for (size_t j = 0; j < locations.size(); ++j) {
        cxlpool_kv_location out;
        if (!translate(c.op, w->namespace_id, locations[j], out)) {
          broken_ = true;
          break;
        }
        if (w->locations != nullptr) w->locations[j] = out;
      }
      if (broken_) break;
      w->status = c.status;
      w->result0 = c.result0;
      w->result1 = c.result1;
      w->result2 = c.result2;
      w->n_locations = static_cast<uint32_t>(locations.size());
      w->done = true;
      note_lease_result(c.op, c.status, w->param0, c.result0);
    } else {
      const uint64_t slot_index = c.request_id & kSlotMask;
      if (slot_index >= slots_.size()) {
        broken_ = true;
        break;
      }
      Slot& slot = slots_[slot_index];
      if (slot.id != c.request_id || slot.op != c.op || locations.size() > slot.n_keys) {
        broken_ = true;
        break;
      }
      for (const proto::KvLocation& loc : locations) {
        cxlpool_kv_location out;
        if (!translate(c.op, slot.namespace_id, loc, out)) {
          broken_ = true;
          break;
        }
      }
      if (broken_) break;
      stash_.push_back(Stashed{c, slot.user_data, slot.namespace_id, static_cast<uint32_t>(stash_locations_.size())});
      stash_locations_.insert(stash_locations_.end(), locations.begin(), locations.end());
      note_lease_result(c.op, c.status, slot.param0, c.result0);
      slot.id = 0;
      free_slots_.push_back(static_cast<uint32_t>(slot_index));
      stashed = true;
    }
    routed = true;
  }
  if (ring_.broken()) broken_ = true;
  if (broken_) {
    routed = true;  // sleepers must see it
    log(LogLevel::kWarning, "kv", "cxlpoold broke the KV ring protocol; the data path is unusable");
  }
  if (routed && cv_sleepers_ > 0) cv_.notify_all();
  // An external poll loop armed the eventfd, but this thread took the
  // completions it was waiting for off the ring: ring for it.
  if (stashed && external_armed_) proto::ring_kick(cq_efd_.get());
}

void KvSession::sleep_locked(std::unique_lock<std::mutex>& lock, uint64_t deadline_ns) {
  if (poller_) {
    ++cv_sleepers_;
    if (deadline_ns != 0) {
      cv_.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns)));
    } else {
      cv_.wait(lock);
    }
    --cv_sleepers_;
    return;
  }
  if (!ring_.arm_wakeup()) return;  // completions arrived meanwhile
  poller_ = true;
  int timeout_ms = -1;
  if (deadline_ns != 0) {
    const uint64_t now = monotonic_ns();
    const uint64_t left = deadline_ns > now ? deadline_ns - now : 0;
    timeout_ms = static_cast<int>(std::min<uint64_t>((left + 999'999) / 1'000'000, INT_MAX));
  }
  lock.unlock();
  pollfd fds[2] = {{cq_efd_.get(), POLLIN, 0}, {socket_fd_, POLLRDHUP, 0}};
  const int ready = ::poll(fds, socket_fd_ >= 0 ? 2 : 1, timeout_ms);
  if (ready > 0 && (fds[0].revents & POLLIN) != 0) {
    uint64_t count = 0;
    (void)!::read(cq_efd_.get(), &count, sizeof count);
  }
  const bool gone = ready > 0 && socket_fd_ >= 0 && (fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
  lock.lock();
  poller_ = false;
  if (!external_armed_) ring_.disarm_wakeup();
  if (gone) dead_ = true;
  if (cv_sleepers_ > 0) cv_.notify_all();  // one of them becomes the poller
}

template <typename Done>
Result<bool> KvSession::wait_locked(std::unique_lock<std::mutex>& lock, Done&& done, uint64_t deadline_ns) {
  const uint64_t start = monotonic_ns();
  const uint64_t spin_until = start + spin_ns_;
  for (;;) {
    drain_locked();
    if (done()) return true;
    if (auto ok = usable_locked(); !ok) return tl::unexpected(ok.error());
    const uint64_t now = monotonic_ns();
    if (deadline_ns != 0 && now >= deadline_ns) return false;
    if (now < spin_until) {
      // The daemon answers within microseconds when it is polling; a
      // sleep and wake-up cost more than that.
      lock.unlock();
      if (now - start < kQuietSpinNs && !ring_.daemon_on_this_cpu()) {
        for (int i = 0; i < 32; ++i) cpu_relax();
      } else {
        ::sched_yield();
      }
      lock.lock();
      continue;
    }
    sleep_locked(lock, deadline_ns);
  }
}

Result<void> KvSession::submit_one_locked(const proto::KvRequest& request, std::span<const cxlpool_kv_key> keys,
                                          std::span<const uint32_t> checksums) {
  std::span<const proto::KvKey> records = wire_keys(keys);
  if (!checksums.empty()) {
    // Declared checksums travel as records after the keys.
    records_.assign(records.begin(), records.end());
    proto::kv_append_checksums(checksums, records_);
    records = records_;
  }
  auto ok = ring_.submit(request, records);
  if (!ok && ok.error().code == EAGAIN) {
    // Completions still in the ring count against the in-flight limit.
    drain_locked();
    ok = ring_.submit(request, records);
  }
  if (!ok && ok.error().code == EPIPE) broken_ = true;
  return ok;
}

Result<size_t> KvSession::submit(std::span<const cxlpool_kv_request> requests) {
  std::unique_lock lock(mutex_);
  if (auto ok = usable_locked(); !ok) return tl::unexpected(ok.error());
  size_t queued = 0;
  Error error;
  for (; queued < requests.size(); ++queued) {
    const cxlpool_kv_request& r = requests[queued];
    if (r.op < 1 || r.op > proto::kKvOpMax || r.flags > UINT16_MAX || (r.n_keys > 0 && r.keys == nullptr)) {
      error = Error{EINVAL, "request " + std::to_string(queued) + ": unknown op, flags out of range or keys NULL"};
      break;
    }
    // With CXLPOOL_KV_COMMIT_CHECKSUMS, param1 is where the checksums are
    // (the request struct keeps its size: no field of its own).
    const bool declares = (r.flags & proto::kKvPutCommitChecksums) != 0;
    const auto* checksums = reinterpret_cast<const uint32_t*>(static_cast<uintptr_t>(declares ? r.param1 : 0));
    if (declares && (r.op != op_of(proto::KvOp::kPutCommit) || checksums == nullptr)) {
      error = Error{EINVAL, "request " + std::to_string(queued) +
                                ": CXLPOOL_KV_COMMIT_CHECKSUMS needs a put_commit whose param1 points at the checksums"};
      break;
    }
    if (free_slots_.empty()) drain_locked();
    if (free_slots_.empty()) {
      error = Error{EAGAIN, "every completion slot is taken"};
      break;
    }
    // Taken before submitting: a drain on the way may free other slots.
    const uint32_t slot_index = free_slots_.back();
    free_slots_.pop_back();
    generation_ = (generation_ & kGenerationMask) + 1;
    if (generation_ > kGenerationMask) generation_ = 1;
    proto::KvRequest wire;
    wire.request_id = (uint64_t{generation_} << 32) | slot_index;
    wire.op = static_cast<uint8_t>(r.op);
    wire.flags = static_cast<uint16_t>(r.flags);
    wire.namespace_id = r.namespace_id;
    wire.param0 = r.param0;
    wire.param1 = declares ? r.n_keys : r.param1;
    auto ok = submit_one_locked(wire, {r.keys, r.n_keys}, {checksums, declares ? r.n_keys : 0});
    if (!ok) {
      free_slots_.push_back(slot_index);
      error = ok.error();
      break;
    }
    slots_[slot_index] = Slot{wire.request_id, r.user_data, r.param0, r.n_keys, wire.op, r.namespace_id};
  }
  ring_.flush();
  async_in_flight_ += queued;
  if (queued == 0 && !requests.empty()) return tl::unexpected(std::move(error));
  return queued;
}

void KvSession::compact_stash_locked() {
  if (stash_head_ == stash_.size()) {
    stash_.clear();
    stash_locations_.clear();
    stash_head_ = 0;
    return;
  }
  // A caller that reaps fewer than arrive must not make the stash grow
  // forever: drop the reaped front once it is most of the stash.
  if (stash_head_ < 64 || stash_head_ * 2 < stash_.size()) return;
  const uint32_t first = stash_[stash_head_].first_location;
  stash_.erase(stash_.begin(), stash_.begin() + static_cast<ptrdiff_t>(stash_head_));
  stash_locations_.erase(stash_locations_.begin(), stash_locations_.begin() + first);
  for (Stashed& s : stash_) s.first_location -= first;
  stash_head_ = 0;
}

Result<size_t> KvSession::reap(std::span<cxlpool_kv_completion> out, int timeout_ms) {
  std::unique_lock lock(mutex_);
  if (external_armed_) {
    // The caller slept on the eventfd and woke: consume the doorbell so its
    // poll loop does not spin on a stale one.
    external_armed_ = false;
    uint64_t count = 0;
    (void)!::read(cq_efd_.get(), &count, sizeof count);
    if (!poller_) ring_.disarm_wakeup();
  }
  drain_locked();
  auto ready = [&] { return stash_head_ < stash_.size(); };
  if (!ready() && timeout_ms != 0 && async_in_flight_ > 0 && !out.empty()) {
    const uint64_t deadline = timeout_ms < 0 ? 0 : monotonic_ns() + uint64_t(timeout_ms) * 1'000'000;
    auto woke = wait_locked(lock, ready, deadline);
    if (!woke && !ready()) return tl::unexpected(woke.error());
  }
  if (!ready()) {
    if (auto ok = usable_locked(); !ok && async_in_flight_ > 0) return tl::unexpected(ok.error());
    return size_t{0};
  }
  const size_t n = std::min(out.size(), stash_.size() - stash_head_);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += stash_[stash_head_ + i].completion.count;
  reaped_locations_.resize(total);
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const Stashed& s = stash_[stash_head_ + i];
    const proto::KvCompletion& c = s.completion;
    for (uint32_t j = 0; j < c.count; ++j) {
      (void)translate(c.op, s.namespace_id, stash_locations_[s.first_location + j],
                      reaped_locations_[at + j]);  // checked at drain
    }
    out[i] = cxlpool_kv_completion{s.user_data, c.status, c.op, c.result0, c.result1, c.result2,
                                   c.count != 0 ? reaped_locations_.data() + at : nullptr, c.count};
    at += c.count;
  }
  stash_head_ += n;
  async_in_flight_ -= n;
  compact_stash_locked();
  return n;
}

Result<bool> KvSession::arm() {
  std::unique_lock lock(mutex_);
  if (auto ok = usable_locked(); !ok) return tl::unexpected(ok.error());
  external_armed_ = true;
  drain_locked();
  if (stash_head_ < stash_.size()) return false;
  return ring_.arm_wakeup();
}

uint64_t KvSession::in_flight() {
  std::lock_guard lock(mutex_);
  return async_in_flight_;
}

Result<void> KvSession::call(const KvCall& request, KvWaiter& waiter) {
  std::unique_lock lock(mutex_);
  if (auto ok = usable_locked(); !ok) return ok;
  waiter.id = kHelperBit | (next_helper_id_++ & ~(kHelperBit | kDetachedBit));
  waiter.op = request.op;
  waiter.param0 = request.param0;
  waiter.done = false;
  // Linked while the lock is held; the guard is destroyed before `lock`.
  struct Link {
    KvWaiter*& head;
    KvWaiter& w;
    Link(KvWaiter*& h, KvWaiter& x) : head(h), w(x) {
      w.next = head;
      head = &w;
    }
    ~Link() {
      for (KvWaiter** p = &head; *p != nullptr; p = &(*p)->next) {
        if (*p == &w) {
          *p = w.next;
          return;
        }
      }
    }
  } link(waiters_, waiter);

  waiter.namespace_id = request.namespace_id;
  proto::KvRequest wire;
  wire.request_id = waiter.id;
  wire.op = request.op;
  wire.flags = request.flags;
  wire.namespace_id = request.namespace_id;
  wire.param0 = request.param0;
  wire.param1 = request.checksums.empty() ? request.param1 : request.keys.size();
  for (;;) {
    auto ok = submit_one_locked(wire, request.keys, request.checksums);
    if (ok) break;
    if (ok.error().code != EAGAIN) return ok;
    // Full of other requests: wait until something completes, then retry.
    ring_.flush();
    const size_t stash_before = stash_.size();
    const size_t free_before = free_slots_.size();
    auto progressed = wait_locked(
        lock, [&] { return stash_.size() != stash_before || free_slots_.size() != free_before; },
        monotonic_ns() + kFullRetryNs);
    if (!progressed) return tl::unexpected(progressed.error());
  }
  ring_.flush();
  auto done = wait_locked(lock, [&] { return waiter.done; }, 0);
  if (!done) return tl::unexpected(done.error());
  return {};
}

Result<bool> KvSession::release_nowait(uint64_t lease) {
  std::unique_lock lock(mutex_);
  if (auto ok = usable_locked(); !ok) return tl::unexpected(ok.error());
  proto::KvRequest wire;
  wire.request_id = kHelperBit | kDetachedBit | (next_helper_id_++ & ~(kHelperBit | kDetachedBit));
  wire.op = op_of(proto::KvOp::kRelease);
  wire.param0 = lease;
  // Room first, so that a full vector cannot fail after the request left
  // (at most the CQ's entries are in flight: this stops growing).
  if (detached_.size() == detached_.capacity()) detached_.reserve(2 * detached_.size() + 16);
  auto ok = submit_one_locked(wire, {});
  if (!ok) {
    if (ok.error().code == EAGAIN) return false;
    return tl::unexpected(ok.error());
  }
  detached_.push_back(wire.request_id);
  forget_lease_locked(lease);
  ring_.flush();
  return true;
}

}  // namespace cxlpool::client
