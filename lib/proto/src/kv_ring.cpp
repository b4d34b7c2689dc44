// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/proto/kv_ring.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

namespace cxlpool::proto {
namespace {

constexpr int32_t kMinStatus = -4095;

// Where a list of `bytes` goes when the slab's free-running cursor is at
// `cursor`: contiguous after it, or at the slab start when it would cross
// the end (the tail of the slab is skipped). `advance` includes the skip.
struct Placement {
  uint32_t offset;
  uint64_t advance;
};
Placement place(uint64_t cursor, uint64_t bytes, uint32_t slab) {
  if (bytes == 0) return {0, 0};
  const uint64_t pos = cursor % slab;
  if (pos + bytes <= slab) return {static_cast<uint32_t>(pos), bytes};
  return {0, (slab - pos) + bytes};
}

uint32_t max_records(uint32_t slab_bytes) {
  return std::min<uint32_t>(kKvMaxRecordsPerEntry, slab_bytes / kKvRecordBytes);
}

bool slab_valid(uint32_t b) { return b >= kKvSlabMinBytes && b <= kKvSlabMaxBytes && b % 64 == 0; }

bool fits(std::span<std::byte> mapping, const KvRingGeometry& g) {
  return kv_ring_geometry_valid(g) && mapping.size() >= kv_ring_layout(g).total_bytes &&
         reinterpret_cast<uintptr_t>(mapping.data()) % alignof(KvRingHeader) == 0;
}

void store_flag(uint32_t& w, uint32_t v) { RingWord(w).store(v, std::memory_order_relaxed); }

// Known op (0 only with an error status: the request's op was unknown),
// status 0 or a negative errno, reserved fields zero.
bool kv_completion_well_formed(const KvCompletion& c) {
  const bool op_ok = (c.op >= 1 && c.op <= kKvOpMax) || (c.op == 0 && c.status < 0);
  return op_ok && c.status <= 0 && c.status >= kMinStatus && c.reserved0 == 0 && c.flags == 0 &&
         c.reserved1[0] == 0 && c.reserved1[1] == 0;
}

// Where the list of an entry just read from a ring must be, given the
// consumer's slab cursor and what this pass has used of the slab so far.
// nullopt when the entry puts it elsewhere, or when the lists published but
// not consumed would exceed the slab (beyond it, lists overlap): the
// producer broke the ring's rules.
std::optional<Placement> list_in_place(uint64_t slab_cursor, uint64_t& slab_used, uint32_t count,
                                       uint32_t arg_offset, uint32_t slab) {
  const Placement at = place(slab_cursor, uint64_t{count} * kKvRecordBytes, slab);
  slab_used += at.advance;
  if (arg_offset != at.offset || slab_used > slab) return std::nullopt;
  return at;
}

// Copies `count` records at `offset` of a slab to the end of `records`;
// returns the index of the first.
template <typename Record>
uint32_t copy_records(std::vector<Record>& records, const std::byte* slab, uint32_t offset, uint32_t count) {
  const size_t first = records.size();
  records.resize(first + count);
  if (count != 0) std::memcpy(records.data() + first, slab + offset, uint64_t{count} * kKvRecordBytes);
  return static_cast<uint32_t>(first);
}

// One ring's entries and list slab, as its consumer reads them.
struct ConsumerView {
  const std::byte* entries;
  uint32_t mask;
  const std::byte* slab;
  uint32_t slab_bytes;
};

struct Copied {
  uint64_t entries;
  bool broken;  // the entry after them broke the ring's rules
};

// Copies up to `n` entries from index `tail` on, with their lists, out of
// the mapping: `keep` stores an entry, its records go to the end of
// `records` and the index of its first to `first_record`. Stops at the
// first entry that `entry_ok(entry, index)` refuses, whose list is longer
// than the slab allows, or whose list is out of place. Advances `slab_tail`
// past the lists copied.
template <typename Entry, typename Record, typename EntryOk, typename Keep>
Copied copy_out(const ConsumerView& ring, uint64_t tail, uint64_t& slab_tail, uint64_t n, std::vector<Record>& records,
                std::vector<uint32_t>& first_record, EntryOk entry_ok, Keep keep) {
  const uint32_t limit = max_records(ring.slab_bytes);
  uint64_t slab_used = 0;
  for (uint64_t done = 0; done < n; ++done) {
    Entry e;
    std::memcpy(&e, ring.entries + ((tail + done) & ring.mask) * kKvRingEntryBytes, sizeof e);
    if (e.count > limit || !entry_ok(e, done)) return {done, true};
    const auto at = list_in_place(slab_tail, slab_used, e.count, e.arg_offset, ring.slab_bytes);
    if (!at) return {done, true};
    keep(e);
    first_record.push_back(copy_records(records, ring.slab, at->offset, e.count));
    slab_tail += at->advance;
  }
  return {n, false};
}

// Makes sure `need` more entries or slab bytes fit in a ring or slab of
// `cap`, whose producer is at `head` and whose consumer was last seen at
// `tail_seen`. When they do not, `refresh()` reads the consumer's cursor
// once more into `tail_seen` (false: the ring is broken, EPIPE); EAGAIN
// with `full` when they still do not fit.
template <typename Refresh>
Result<void> make_room(uint64_t need, uint64_t cap, uint64_t head, const uint64_t& tail_seen, Refresh refresh,
                       const char* full) {
  auto fits = [&] { return (head - tail_seen) + need <= cap; };
  if (fits()) return {};
  if (!refresh()) return fail(EPIPE, "kv ring: broken");
  if (fits()) return {};
  return fail(EAGAIN, full);
}

// Stages an entry at index `head` of a ring with its list, which goes
// where `at` places it in the slab; fills the entry's count and arg_offset
// and advances the producer's cursors past both.
template <typename Entry, typename Record>
void stage(std::byte* entries, uint32_t mask, uint64_t& head, std::byte* slab, uint64_t& slab_head,
           const Placement& at, Entry e, std::span<const Record> records) {
  e.count = static_cast<uint32_t>(records.size());
  e.arg_offset = at.offset;
  if (!records.empty()) std::memcpy(slab + at.offset, records.data(), records.size_bytes());
  std::memcpy(entries + (head & mask) * kKvRingEntryBytes, &e, sizeof e);
  slab_head += at.advance;
  ++head;
}

// Kicks `efd` when the other end asked to be woken. The fence pairs with the
// one in the other end's arm_wakeup: either it sees what we published
// before, or we see its flag. Returns whether it kicked.
bool kick_if_asked(uint32_t& need_wakeup, int efd) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (ring_word(need_wakeup) == 0) return false;
  ring_kick(efd);
  return true;
}

// Publishes what was staged since the last call (`published`) as the
// producer index and wakes the consumer if it sleeps. Returns whether it
// kicked.
bool publish(uint64_t head, uint64_t& published, uint64_t& producer, uint32_t& need_wakeup, int efd) {
  if (head == published) return false;
  RingIndex(producer).store(head, std::memory_order_release);
  published = head;
  return kick_if_asked(need_wakeup, efd);
}

// Asks the other end to kick us, then looks once more for work that came
// before the flag was visible; with work, withdraws the request and returns
// false (do not sleep).
template <typename WorkPending>
bool arm(uint32_t& need_wakeup, WorkPending work_pending) {
  store_flag(need_wakeup, 1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (work_pending()) {
    store_flag(need_wakeup, 0);
    return false;
  }
  return true;
}

// arm_wakeup, sleep on the doorbell, disarm_wakeup.
template <typename RingEnd>
Result<bool> sleep_until_kicked(RingEnd& end, int efd, int timeout_ms) {
  if (!end.arm_wakeup()) return true;
  auto woke = ring_wait(efd, timeout_ms);
  end.disarm_wakeup();
  return woke;
}

}  // namespace

bool kv_ring_geometry_valid(const KvRingGeometry& g) {
  auto entries_ok = [](uint32_t n) { return n >= kKvRingMinEntries && ring_power_of_two(n, kKvRingMaxEntries); };
  return entries_ok(g.sq_entries) && entries_ok(g.cq_entries) && slab_valid(g.sq_slab_bytes) &&
         slab_valid(g.cq_slab_bytes);
}

KvRingLayout kv_ring_layout(const KvRingGeometry& g) {
  KvRingLayout l;
  uint64_t at = kKvRingHeaderBytes;
  l.sq_ring_offset = static_cast<uint32_t>(at);
  at += uint64_t{g.sq_entries} * kKvRingEntryBytes;
  l.cq_ring_offset = static_cast<uint32_t>(at);
  at += uint64_t{g.cq_entries} * kKvRingEntryBytes;
  l.sq_slab_offset = static_cast<uint32_t>(at);
  at += g.sq_slab_bytes;
  l.cq_slab_offset = static_cast<uint32_t>(at);
  at += g.cq_slab_bytes;
  l.total_bytes = at;
  return l;
}

bool kv_request_well_formed(const KvRequest& r) {
  if (r.op < 1 || r.op > kKvOpMax || r.reserved0 != 0 || r.reserved1 != 0 || r.reserved2[0] != 0 ||
      r.reserved2[1] != 0) {
    return false;
  }
  const auto op = static_cast<KvOp>(r.op);
  const uint16_t allowed = op == KvOp::kLookup      ? kKvLookupCostCutoff
                           : op == KvOp::kPutCommit ? kKvPutCommitToSsd | kKvPutCommitChecksums
                                                    : 0;
  if ((r.flags & ~allowed) != 0) return false;
  if (kv_declares_checksums(r)) {
    // Compared in 64 bits: a param1 near 2^64 must not wrap into a match.
    return r.param1 >= 1 && r.param1 <= kKvMaxRecordsPerEntry &&
           uint64_t{r.count} == r.param1 + kv_checksum_records(static_cast<uint32_t>(r.param1));
  }
  return op == KvOp::kRelease ? r.count == 0 : r.count >= 1;
}

bool kv_declares_checksums(const KvRequest& r) {
  return r.op == static_cast<uint8_t>(KvOp::kPutCommit) && (r.flags & kKvPutCommitChecksums) != 0;
}

std::span<const KvKey> kv_request_keys(const KvRequest& r, std::span<const KvKey> records) {
  return kv_declares_checksums(r) ? records.first(std::min<uint64_t>(r.param1, records.size())) : records;
}

uint32_t kv_checksum_at(std::span<const KvKey> records, uint32_t i) {
  const KvKey& rec = records[i / 4];
  const uint64_t word = (i % 4) < 2 ? rec.lo : rec.hi;
  return static_cast<uint32_t>(word >> (32 * (i % 2)));
}

void kv_append_checksums(std::span<const uint32_t> checksums, std::vector<KvKey>& out) {
  for (size_t i = 0; i < checksums.size(); i += 4) {
    uint32_t lane[4] = {0, 0, 0, 0};
    for (size_t j = 0; j < 4 && i + j < checksums.size(); ++j) lane[j] = checksums[i + j];
    out.push_back(KvKey{uint64_t{lane[0]} | (uint64_t{lane[1]} << 32), uint64_t{lane[2]} | (uint64_t{lane[3]} << 32)});
  }
}

void KvRequestBatch::clear() {
  requests.clear();
  errors.clear();
  first_key.clear();
  keys.clear();
}

void KvCompletionBatch::clear() {
  completions.clear();
  first_location.clear();
  locations.clear();
}

// ------------------------------------------------------------------ memory

Result<KvRingMemory> KvRingMemory::create(const KvRingGeometry& g) {
  if (!kv_ring_geometry_valid(g)) return fail(EINVAL, "kv ring: invalid geometry");
  auto mapping = ShmMapping::create("cxlpool-kv-ring", kv_ring_layout(g).total_bytes);
  if (!mapping) return tl::unexpected(mapping.error());
  if (auto ok = kv_ring_init(mapping->bytes(), g); !ok) return tl::unexpected(ok.error());
  KvRingMemory memory;
  memory.mapping_ = std::move(*mapping);
  return memory;
}

Result<KvRingMemory> KvRingMemory::map(int fd, uint64_t total_bytes) {
  if (total_bytes < kKvRingHeaderBytes || total_bytes > uint64_t{kKvRingHeaderBytes} + 2ull * kKvRingMaxEntries *
                                                                kKvRingEntryBytes + 2ull * kKvSlabMaxBytes) {
    return fail(EPROTO, "kv ring: size out of range");
  }
  auto mapping = ShmMapping::map(fd, total_bytes);
  if (!mapping) return tl::unexpected(mapping.error());
  KvRingMemory memory;
  memory.mapping_ = std::move(*mapping);
  return memory;
}

Result<void> kv_ring_init(std::span<std::byte> mapping, const KvRingGeometry& g) {
  if (!fits(mapping, g)) return fail(EINVAL, "kv ring: bad geometry, or mapping too small or misaligned");
  const KvRingLayout l = kv_ring_layout(g);
  std::memset(mapping.data(), 0, kKvRingHeaderBytes);
  auto* h = reinterpret_cast<KvRingHeader*>(mapping.data());
  h->magic = kKvRingMagic;
  h->version = kKvRingVersion;
  h->sq_entries = g.sq_entries;
  h->cq_entries = g.cq_entries;
  h->sq_slab_bytes = g.sq_slab_bytes;
  h->cq_slab_bytes = g.cq_slab_bytes;
  h->entry_bytes = kKvRingEntryBytes;
  h->record_bytes = kKvRecordBytes;
  h->header_bytes = kKvRingHeaderBytes;
  h->sq_ring_offset = l.sq_ring_offset;
  h->cq_ring_offset = l.cq_ring_offset;
  h->sq_slab_offset = l.sq_slab_offset;
  h->cq_slab_offset = l.cq_slab_offset;
  h->total_bytes = l.total_bytes;
  return {};
}

// ------------------------------------------------------------------ client

Result<KvClientRing> KvClientRing::attach(std::span<std::byte> mapping, int sq_efd, int cq_efd) {
  if (mapping.size() < kKvRingHeaderBytes || reinterpret_cast<uintptr_t>(mapping.data()) % alignof(KvRingHeader) != 0) {
    return fail(EPROTO, "kv ring: mapping smaller than its header");
  }
  auto* h = reinterpret_cast<KvRingHeader*>(mapping.data());
  if (h->magic != kKvRingMagic || h->version != kKvRingVersion) return fail(EPROTO, "kv ring: bad magic or version");
  const KvRingGeometry g{h->sq_entries, h->cq_entries, h->sq_slab_bytes, h->cq_slab_bytes};
  if (h->entry_bytes != kKvRingEntryBytes || h->record_bytes != kKvRecordBytes ||
      h->header_bytes != kKvRingHeaderBytes || !fits(mapping, g)) {
    return fail(EPROTO, "kv ring: header geometry does not match the mapping");
  }
  const KvRingLayout l = kv_ring_layout(g);
  if (h->sq_ring_offset != l.sq_ring_offset || h->cq_ring_offset != l.cq_ring_offset ||
      h->sq_slab_offset != l.sq_slab_offset || h->cq_slab_offset != l.cq_slab_offset ||
      h->total_bytes != l.total_bytes) {
    return fail(EPROTO, "kv ring: header offsets do not match its geometry");
  }
  if (RingIndex(h->sq_producer).load(std::memory_order_acquire) != 0 ||
      RingIndex(h->sq_consumer).load(std::memory_order_acquire) != 0 ||
      RingIndex(h->sq_slab_consumer).load(std::memory_order_acquire) != 0 ||
      RingIndex(h->cq_producer).load(std::memory_order_acquire) != 0 ||
      RingIndex(h->cq_consumer).load(std::memory_order_acquire) != 0 ||
      RingIndex(h->cq_slab_consumer).load(std::memory_order_acquire) != 0) {
    return fail(EPROTO, "kv ring: not a fresh ring");
  }
  KvClientRing c;
  c.header_ = h;
  c.sq_ = mapping.data() + l.sq_ring_offset;
  c.cq_ = mapping.data() + l.cq_ring_offset;
  c.sq_slab_ = mapping.data() + l.sq_slab_offset;
  c.cq_slab_ = mapping.data() + l.cq_slab_offset;
  c.geometry_ = g;
  c.sq_mask_ = g.sq_entries - 1;
  c.cq_mask_ = g.cq_entries - 1;
  c.sq_efd_ = sq_efd;
  c.cq_efd_ = cq_efd;
  return c;
}

Result<void> KvClientRing::submit(const KvRequest& request, std::span<const KvKey> keys) {
  if (header_ == nullptr || broken_) return fail(EPIPE, "kv ring: broken");
  KvRequest e = request;
  e.count = static_cast<uint32_t>(std::min<size_t>(keys.size(), UINT32_MAX));
  e.arg_offset = 0;
  if (keys.size() > max_records(geometry_.sq_slab_bytes) || !kv_request_well_formed(e)) {
    return fail(EINVAL, "kv ring: malformed request or too many keys");
  }
  if (in_flight() >= geometry_.cq_entries) return fail(EAGAIN, "kv ring: completion ring would overflow");
  // Acquire pairs with the daemon's release: it has copied the entries and
  // lists out. A cursor beyond ours is a daemon bug: we stay "full".
  auto see_tail = [](uint64_t& consumer, uint64_t head, uint64_t cap, uint64_t& tail_seen) {
    const uint64_t tail = RingIndex(consumer).load(std::memory_order_acquire);
    if (head - tail <= cap) tail_seen = tail;
    return true;
  };
  const uint64_t sq_cap = uint64_t{sq_mask_} + 1;
  auto ring_room = make_room(1, sq_cap, sq_head_, sq_tail_seen_, [&] {
    return see_tail(header_->sq_consumer, sq_head_, sq_cap, sq_tail_seen_);
  }, "kv ring: submission ring full");
  if (!ring_room) return ring_room;
  const uint32_t slab = geometry_.sq_slab_bytes;
  const Placement at = place(sq_slab_head_, keys.size_bytes(), slab);
  auto slab_room = make_room(at.advance, slab, sq_slab_head_, sq_slab_tail_seen_, [&] {
    return see_tail(header_->sq_slab_consumer, sq_slab_head_, slab, sq_slab_tail_seen_);
  }, "kv ring: submission slab full");
  if (!slab_room) return slab_room;
  stage(sq_, sq_mask_, sq_head_, sq_slab_, sq_slab_head_, at, e, keys);
  ++submitted_;
  return {};
}

bool KvClientRing::flush() {
  if (header_ == nullptr || broken_) return false;
  return publish(sq_head_, sq_published_, header_->sq_producer, header_->sq_need_wakeup, sq_efd_);
}

size_t KvClientRing::reap(KvCompletionBatch& out, size_t max) {
  if (header_ == nullptr || broken_) return 0;
  const uint64_t head = RingIndex(header_->cq_producer).load(std::memory_order_acquire);
  const uint64_t available = head - cq_tail_;
  if (available > uint64_t{cq_mask_} + 1) {
    broken_ = true;
    return 0;
  }
  // The lists of the completions in one reap were all in the slab at once.
  const Copied copied = copy_out<KvCompletion>(
      ConsumerView{cq_, cq_mask_, cq_slab_, geometry_.cq_slab_bytes}, cq_tail_, cq_slab_tail_,
      std::min<uint64_t>(available, max), out.locations, out.first_location,
      [&](const KvCompletion& c, uint64_t i) { return kv_completion_well_formed(c) && reaped_ + i < submitted_; },
      [&](const KvCompletion& c) { out.completions.push_back(c); });
  const uint64_t done = copied.entries;
  if (copied.broken) {
    broken_ = true;
    return done;
  }
  cq_tail_ += done;
  reaped_ += done;
  if (done > 0) {
    // Release: our copies are complete before the daemon reuses the space.
    RingIndex(header_->cq_slab_consumer).store(cq_slab_tail_, std::memory_order_release);
    RingIndex(header_->cq_consumer).store(cq_tail_, std::memory_order_release);
    // The daemon may sleep waiting for CQ space.
    kick_if_asked(header_->sq_need_wakeup, sq_efd_);
  }
  return done;
}

bool KvClientRing::completions_pending() const {
  return RingIndex(header_->cq_producer).load(std::memory_order_acquire) != cq_tail_;
}

bool KvClientRing::daemon_on_this_cpu() const {
  if (header_ == nullptr) return false;
  const uint32_t said = ring_word(header_->daemon_cpu);
  const int cpu = ::sched_getcpu();
  return said != 0 && cpu >= 0 && said == static_cast<uint32_t>(cpu) + 1;
}

bool KvClientRing::arm_wakeup() {
  if (header_ == nullptr || broken_) return false;
  return arm(header_->cq_need_wakeup, [this] { return completions_pending(); });
}

void KvClientRing::disarm_wakeup() {
  if (header_ != nullptr) store_flag(header_->cq_need_wakeup, 0);
}

Result<bool> KvClientRing::wait(int timeout_ms) {
  if (header_ == nullptr || broken_) return fail(EPIPE, "kv ring: broken");
  auto woke = sleep_until_kicked(*this, cq_efd_, timeout_ms);
  if (!woke) return tl::unexpected(woke.error());
  return *woke || completions_pending();
}

// ------------------------------------------------------------------ daemon

Result<KvDaemonRing> KvDaemonRing::attach(std::span<std::byte> mapping, const KvRingGeometry& g, int sq_efd,
                                          int cq_efd) {
  if (!fits(mapping, g)) return fail(EINVAL, "kv ring: mapping too small for its geometry");
  const KvRingLayout l = kv_ring_layout(g);
  KvDaemonRing d;
  d.header_ = reinterpret_cast<KvRingHeader*>(mapping.data());
  d.sq_ = mapping.data() + l.sq_ring_offset;
  d.cq_ = mapping.data() + l.cq_ring_offset;
  d.sq_slab_ = mapping.data() + l.sq_slab_offset;
  d.cq_slab_ = mapping.data() + l.cq_slab_offset;
  d.geometry_ = g;
  d.layout_ = l;
  d.sq_mask_ = g.sq_entries - 1;
  d.cq_mask_ = g.cq_entries - 1;
  d.sq_efd_ = sq_efd;
  d.cq_efd_ = cq_efd;
  // Attached right after kv_ring_init: every index is 0, and ours stay ours.
  return d;
}

bool KvDaemonRing::header_intact() const {
  KvRingHeader* h = header_;
  return ring_word(h->magic) == kKvRingMagic && ring_word(h->version) == kKvRingVersion &&
         ring_word(h->sq_entries) == geometry_.sq_entries && ring_word(h->cq_entries) == geometry_.cq_entries &&
         ring_word(h->sq_slab_bytes) == geometry_.sq_slab_bytes &&
         ring_word(h->cq_slab_bytes) == geometry_.cq_slab_bytes && ring_word(h->entry_bytes) == kKvRingEntryBytes &&
         ring_word(h->record_bytes) == kKvRecordBytes && ring_word(h->header_bytes) == kKvRingHeaderBytes;
}

bool KvDaemonRing::refresh_cq_tail() {
  const uint64_t tail = RingIndex(header_->cq_consumer).load(std::memory_order_acquire);
  const uint64_t slab_tail = RingIndex(header_->cq_slab_consumer).load(std::memory_order_acquire);
  // A client that claims to have reaped what was never produced, or whose
  // indices went back more than a ring's worth, is not following the protocol.
  if (cq_head_ - tail > uint64_t{cq_mask_} + 1 || cq_slab_head_ - slab_tail > geometry_.cq_slab_bytes) {
    broken_ = true;
    return false;
  }
  cq_tail_seen_ = tail;
  cq_slab_tail_seen_ = slab_tail;
  return true;
}

uint64_t KvDaemonRing::take_room() const {
  const uint64_t used = (taken_ - completed_) + (cq_head_ - cq_tail_seen_);
  const uint64_t cap = uint64_t{cq_mask_} + 1;
  return used < cap ? cap - used : 0;
}

size_t KvDaemonRing::take(KvRequestBatch& out, size_t max) {
  if (header_ == nullptr || broken_) return 0;
  if (!header_intact()) {
    broken_ = true;
    return 0;
  }
  // Read once; the bound holds for the copy we act on.
  const uint64_t head = RingIndex(header_->sq_producer).load(std::memory_order_acquire);
  const uint64_t available = head - sq_tail_;  // unsigned: a head behind our tail is huge
  if (available > uint64_t{sq_mask_} + 1) {
    broken_ = true;
    return 0;
  }
  if (!refresh_cq_tail()) return 0;
  const uint64_t n = std::min<uint64_t>({available, max, take_room()});
  // A correct client never has more than the slab's worth of lists
  // published but not taken. A malformed request is taken and answered
  // -EINVAL; only a list too long or out of place breaks the ring.
  const Copied copied = copy_out<KvRequest>(
      ConsumerView{sq_, sq_mask_, sq_slab_, geometry_.sq_slab_bytes}, sq_tail_, sq_slab_tail_, n, out.keys,
      out.first_key, [](const KvRequest&, uint64_t) { return true; },
      [&](const KvRequest& r) {
        out.requests.push_back(r);
        out.errors.push_back(kv_request_well_formed(r) ? 0 : -EINVAL);
      });
  const uint64_t done = copied.entries;
  sq_tail_ += done;
  taken_ += done;
  if (copied.broken) {
    broken_ = true;
    return done;
  }
  if (done > 0) {
    // Release: our copies are complete before the client reuses the space.
    RingIndex(header_->sq_slab_consumer).store(sq_slab_tail_, std::memory_order_release);
    RingIndex(header_->sq_consumer).store(sq_tail_, std::memory_order_release);
  }
  return done;
}

Result<void> KvDaemonRing::complete(const KvCompletion& completion, std::span<const KvLocation> locations) {
  if (header_ == nullptr || broken_) return fail(EPIPE, "kv ring: broken");
  const uint32_t slab = geometry_.cq_slab_bytes;
  if (completed_ >= taken_ || locations.size() > max_records(slab) || !kv_completion_well_formed(completion)) {
    return fail(EINVAL, "kv ring: completion without a request, malformed, or too many locations");
  }
  auto refresh = [this] { return refresh_cq_tail(); };
  auto ring_room =
      make_room(1, uint64_t{cq_mask_} + 1, cq_head_, cq_tail_seen_, refresh, "kv ring: completion ring full");
  if (!ring_room) return ring_room;
  const Placement at = place(cq_slab_head_, locations.size_bytes(), slab);
  auto slab_room =
      make_room(at.advance, slab, cq_slab_head_, cq_slab_tail_seen_, refresh, "kv ring: completion slab full");
  if (!slab_room) return slab_room;
  stage(cq_, cq_mask_, cq_head_, cq_slab_, cq_slab_head_, at, completion, locations);
  ++completed_;
  return {};
}

bool KvDaemonRing::flush() {
  if (header_ == nullptr || broken_) return false;
  if (cq_head_ != cq_published_) {
    const int cpu = ::sched_getcpu();
    const uint32_t said = cpu < 0 ? 0 : static_cast<uint32_t>(cpu) + 1;
    if (said != cpu_said_) {
      store_flag(header_->daemon_cpu, said);
      cpu_said_ = said;
    }
  }
  return publish(cq_head_, cq_published_, header_->cq_producer, header_->cq_need_wakeup, cq_efd_);
}

bool KvDaemonRing::arm_wakeup() {
  if (header_ == nullptr || broken_) return false;
  const uint64_t cq_tail_before = cq_tail_seen_;
  const uint64_t cq_slab_tail_before = cq_slab_tail_seen_;
  return arm(header_->sq_need_wakeup, [&] {
    const uint64_t head = RingIndex(header_->sq_producer).load(std::memory_order_acquire);
    const bool refreshed = refresh_cq_tail();
    return !refreshed || (head != sq_tail_ && take_room() > 0) || cq_tail_seen_ != cq_tail_before ||
           cq_slab_tail_seen_ != cq_slab_tail_before;
  });
}

void KvDaemonRing::disarm_wakeup() {
  if (header_ != nullptr) store_flag(header_->sq_need_wakeup, 0);
}

Result<bool> KvDaemonRing::wait(int timeout_ms) {
  if (header_ == nullptr || broken_) return fail(EPIPE, "kv ring: broken");
  return sleep_until_kicked(*this, sq_efd_, timeout_ms);
}

const char* kv_op_name(uint8_t op) {
  switch (static_cast<KvOp>(op)) {
    case KvOp::kLookup: return "lookup";
    case KvOp::kPutBegin: return "put_begin";
    case KvOp::kPutCommit: return "put_commit";
    case KvOp::kGet: return "get";
    case KvOp::kRelease: return "release";
    case KvOp::kPrefetch: return "prefetch";
    case KvOp::kDelete: return "delete";
  }
  return nullptr;
}

}  // namespace cxlpool::proto
