// SPDX-License-Identifier: Apache-2.0
// ClientReportSource: the access source fed by libcxlpool's access reports
// (cxlpool_access_report). Each client connection owns one shared-memory
// ring (cxlpool/proto/access_ring.hpp); this source drains all of them and
// turns each reported object access into per-page accesses of pool regions
// with 64-byte word masks.
//
// Clients are not trusted: a ring whose indexes or header are garbage is
// marked broken and ignored from then on, and an entry naming a region its
// session does not hold, or bytes past the region's end, is rejected and
// counted, never forwarded.
//
// Thread safety: every member is safe to call from any thread (one internal
// lock), but the RegionResolver runs under that lock on the calling thread of
// drain()/collect()/remove_ring(), so a resolver that reads the daemon's
// session table must only be driven from the daemon's event loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/access_source.hpp"
#include "cxlpool/proto/access_ring.hpp"

namespace cxlpool::tiering {

// Answers "does session S hold region R?" with the region's size in bytes,
// or nullopt when it does not.
using RegionResolver = std::function<std::optional<std::uint64_t>(std::uint64_t session_id,
                                                                   std::uint64_t region_id)>;

struct ClientReportCounters {
  std::uint64_t accesses = 0;          // accepted accesses (sum of entry counts)
  std::uint64_t entries = 0;           // accepted ring entries
  std::uint64_t producer_dropped = 0;  // entries clients could not publish: ring full
  std::uint64_t rejected = 0;          // malformed entries, foreign regions, out-of-range bytes
  std::uint64_t pending_overflow = 0;  // pages not kept: the pending table was full
  std::uint64_t broken_rings = 0;      // rings given up on (garbage indexes or header)
  std::uint64_t rings = 0;             // rings registered now
};

class ClientReportSource final : public hal::AccessSource {
 public:
  // Pages of one entry expanded one PageAccess each; the full interior pages
  // of a longer span become a single run (PageAccess::pages > 1).
  static constexpr std::uint64_t kMaxExpandedPages = 64;
  // Distinct pages held between two collect() calls; further new pages are
  // counted in pending_overflow and dropped.
  static constexpr std::size_t kMaxPendingPages = std::size_t{1} << 20;

  ClientReportSource() = default;

  std::string_view name() const override { return "client"; }
  hal::AccessSourceTraits traits() const override;

  // Registers the ring of `session_id`. `mapping` is the daemon's own
  // mapping of a ring it created (access_ring_bytes(entries) bytes; the
  // entry count is derived from its size, never read from the header); it
  // must stay mapped until remove_ring(). EEXIST: the session has a ring;
  // EINVAL: the mapping's size is not that of a ring.
  Result<void> add_ring(std::uint64_t session_id, std::span<std::byte> mapping, RegionResolver resolver);

  // Unregisters a session's ring. With `drain_first`, what it still holds is
  // drained first (call it while the session still holds its regions: the
  // resolver is consulted). Unknown ids are ignored.
  void remove_ring(std::uint64_t session_id, bool drain_first = true);

  // Moves what the rings hold into the pending table (aggregated per page)
  // without handing it out. The daemon calls this between epochs so rings do
  // not fill up while the manager sleeps.
  void drain();

  // drain(), then appends every pending page access and clears the table.
  Result<void> collect(std::vector<hal::PageAccess>& out) override;

  std::uint64_t accesses_total() const override;
  // Ring-full drops reported by producers plus rejected entries.
  std::uint64_t dropped_total() const override;
  ClientReportCounters counters() const;

 private:
  struct Ring {
    proto::AccessRingConsumer consumer;
    RegionResolver resolver;
    bool counted_broken = false;
  };
  struct PageKey {
    std::uint64_t region;
    std::uint64_t page;  // byte offset of the page in the region
    bool operator==(const PageKey&) const = default;
  };
  struct PageKeyHash {
    std::size_t operator()(const PageKey& k) const noexcept;
  };
  struct Pending {
    std::uint64_t count = 0;
    std::uint64_t words = 0;
  };

  void drain_ring(std::uint64_t session_id, Ring& ring);
  void add_entry(const proto::AccessRingEntry& entry);
  void add_page(std::uint64_t region, std::uint64_t page, std::uint64_t count, std::uint64_t words);

  mutable std::mutex mutex_;
  std::map<std::uint64_t, Ring> rings_;
  std::unordered_map<PageKey, Pending, PageKeyHash> pending_;
  std::vector<hal::PageAccess> pending_runs_;
  std::vector<proto::AccessRingEntry> scratch_;
  ClientReportCounters counters_;
};

// The 64-byte words of page [page, page + 4 KiB) that bytes
// [offset, offset + length) touch, as a PageAccess word mask.
std::uint64_t page_word_mask(std::uint64_t page, std::uint64_t offset, std::uint64_t length);

}  // namespace cxlpool::tiering
