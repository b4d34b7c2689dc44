// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/client_report_source.hpp"

#include <bit>
#include <string>
#include <utility>

namespace cxlpool::tiering {
namespace {

constexpr std::uint64_t kPage = hal::kAccessPageBytes;
constexpr std::uint64_t kPageMask = ~(kPage - 1);

}  // namespace

std::uint64_t page_word_mask(std::uint64_t page, std::uint64_t offset, std::uint64_t length) {
  if (length == 0) return 0;
  const std::uint64_t end = offset + length;  // callers guarantee no overflow
  if (end <= page || offset >= page + kPage) return 0;  // the range misses the page
  const std::uint64_t lo = offset > page ? offset - page : 0;
  const std::uint64_t hi = end < page + kPage ? end - page : kPage;  // exclusive
  if (lo >= hi) return 0;
  const std::uint64_t first = lo >> hal::kAccessWordShift;
  const std::uint64_t last = (hi - 1) >> hal::kAccessWordShift;
  const std::uint64_t upto = last == 63 ? ~0ull : (1ull << (last + 1)) - 1;
  return upto & ~((1ull << first) - 1);
}

std::size_t ClientReportSource::PageKeyHash::operator()(const PageKey& k) const noexcept {
  std::uint64_t h = k.region * 0x9e3779b97f4a7c15ull ^ (k.page >> hal::kAccessPageShift);
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return static_cast<std::size_t>(h ^ (h >> 32));
}

hal::AccessSourceTraits ClientReportSource::traits() const {
  return {.word_masks = true, .exact_counts = true, .virtual_addresses = false};
}

Result<void> ClientReportSource::add_ring(std::uint64_t session_id, std::span<std::byte> mapping,
                                          RegionResolver resolver) {
  if (mapping.size() < proto::kAccessRingHeaderBytes) return fail(EINVAL, "access ring mapping too small");
  const std::uint64_t slots = (mapping.size() - proto::kAccessRingHeaderBytes) / sizeof(proto::AccessRingEntry);
  if (slots > UINT32_MAX || !proto::access_ring_entries_valid(static_cast<std::uint32_t>(slots)) ||
      proto::access_ring_bytes(static_cast<std::uint32_t>(slots)) != mapping.size()) {
    return fail(EINVAL, "access ring mapping of " + std::to_string(mapping.size()) + " bytes is not a ring");
  }
  if (!resolver) return fail(EINVAL, "access ring without a region resolver");
  auto consumer = proto::AccessRingConsumer::attach(mapping, static_cast<std::uint32_t>(slots));
  if (!consumer) return tl::unexpected(consumer.error());
  std::lock_guard lock(mutex_);
  if (rings_.contains(session_id)) return fail(EEXIST, "session " + std::to_string(session_id) + " has a ring");
  rings_.emplace(session_id, Ring{*consumer, std::move(resolver)});
  counters_.rings = rings_.size();
  return {};
}

void ClientReportSource::remove_ring(std::uint64_t session_id, bool drain_first) {
  std::lock_guard lock(mutex_);
  auto it = rings_.find(session_id);
  if (it == rings_.end()) return;
  if (drain_first) drain_ring(session_id, it->second);
  rings_.erase(it);
  counters_.rings = rings_.size();
}

void ClientReportSource::drain() {
  std::lock_guard lock(mutex_);
  for (auto& [id, ring] : rings_) drain_ring(id, ring);
}

void ClientReportSource::drain_ring(std::uint64_t session_id, Ring& ring) {
  // Regions seen in this drain: one resolver call per region, not per entry.
  std::unordered_map<std::uint64_t, std::optional<std::uint64_t>> sizes;
  // Several rounds of at most kMaxDrainPerCall each: the ring may hold no
  // more than its capacity, so this ends.
  for (std::uint32_t round = 0; round * proto::AccessRingConsumer::kMaxDrainPerCall <= ring.consumer.capacity();
       ++round) {
    scratch_.clear();
    const auto stats = ring.consumer.drain(scratch_);
    counters_.producer_dropped += stats.producer_dropped;
    counters_.rejected += stats.rejected;
    for (const auto& e : scratch_) {
      auto [at, fresh] = sizes.try_emplace(e.region_id);
      if (fresh) at->second = ring.resolver(session_id, e.region_id);
      if (!at->second || e.offset >= *at->second || e.length > *at->second - e.offset) {
        ++counters_.rejected;
        continue;
      }
      ++counters_.entries;
      counters_.accesses += e.count;
      add_entry(e);
    }
    if (stats.entries + stats.rejected < proto::AccessRingConsumer::kMaxDrainPerCall) break;
  }
  if (ring.consumer.broken() && !ring.counted_broken) {
    ring.counted_broken = true;
    ++counters_.broken_rings;
  }
}

void ClientReportSource::add_entry(const proto::AccessRingEntry& e) {
  const std::uint64_t end = e.offset + e.length;
  const std::uint64_t first = e.offset & kPageMask;
  const std::uint64_t last = (end - 1) & kPageMask;
  const std::uint64_t pages = (last - first) / kPage + 1;
  if (pages <= kMaxExpandedPages) {
    for (std::uint64_t p = first; p <= last; p += kPage) {
      add_page(e.region_id, p, e.count, page_word_mask(p, e.offset, e.length));
    }
    return;
  }
  // A long span (a streamed tensor, say): its edges keep their partial
  // masks, the fully covered interior is one run.
  add_page(e.region_id, first, e.count, page_word_mask(first, e.offset, e.length));
  if (pending_.size() + pending_runs_.size() >= kMaxPendingPages) {
    ++counters_.pending_overflow;
  } else {
    pending_runs_.push_back(hal::PageAccess{.space = hal::AddressSpace::kPoolRegion, .owner = e.region_id,
                                            .address = first + kPage, .count = e.count, .words = ~0ull,
                                            .pages = pages - 2});
  }
  add_page(e.region_id, last, e.count, page_word_mask(last, e.offset, e.length));
}

void ClientReportSource::add_page(std::uint64_t region, std::uint64_t page, std::uint64_t count,
                                  std::uint64_t words) {
  const PageKey key{region, page};
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    if (pending_.size() + pending_runs_.size() >= kMaxPendingPages) {
      ++counters_.pending_overflow;
      return;
    }
    it = pending_.emplace(key, Pending{}).first;
  }
  it->second.count += count;
  it->second.words |= words;
}

Result<void> ClientReportSource::collect(std::vector<hal::PageAccess>& out) {
  std::lock_guard lock(mutex_);
  for (auto& [id, ring] : rings_) drain_ring(id, ring);
  out.reserve(out.size() + pending_.size() + pending_runs_.size());
  for (const auto& [key, p] : pending_) {
    out.push_back(hal::PageAccess{.space = hal::AddressSpace::kPoolRegion, .owner = key.region,
                                  .address = key.page, .count = p.count, .words = p.words});
  }
  out.insert(out.end(), pending_runs_.begin(), pending_runs_.end());
  pending_.clear();
  pending_runs_.clear();
  return {};
}

std::uint64_t ClientReportSource::accesses_total() const {
  std::lock_guard lock(mutex_);
  return counters_.accesses;
}

std::uint64_t ClientReportSource::dropped_total() const {
  std::lock_guard lock(mutex_);
  return counters_.producer_dropped + counters_.rejected + counters_.pending_overflow;
}

ClientReportCounters ClientReportSource::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace cxlpool::tiering
