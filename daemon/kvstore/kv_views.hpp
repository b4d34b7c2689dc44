// SPDX-License-Identifier: Apache-2.0
// Per-namespace views of the KV arenas: what keeps one tenant's chunks out of
// another tenant's address space.
//
// Each namespace that is opened gets, per arena tier, a sparse memfd of the
// arena's size (its view). A slot holding a chunk of namespace N is backed by
// N's view at the slot's offset: the daemon writes the chunk through its own
// writable mapping of N's view, and a client that may read N maps N's views
// read-only and finds the chunk at the offset the store reports. When a slot
// passes from namespace A to namespace B, A's view is punched at that range
// (fallocate PUNCH_HOLE) before B's chunk is written, so a page is never
// backed twice and A's readers see zeros there, never B's bytes. A slot that
// goes back to the namespace it held before keeps its pages (one model on a
// host pays nothing). The pages of every view together never exceed the
// arena's slots: each slot is backed in at most one view (with 2 MiB pages
// and slots smaller than that, a view may hold a whole page around one
// slot: kv_view_dir.hpp).
//
// The views are placed like the arena they stand for (bound to the tier's
// NUMA node when it has one; an emulated tier's views are plain memfds, with
// 4 KiB pages even where the tier's regions use hugetlbfs). Clients get
// read-only descriptors of a view whose inode is owned by the daemon's uid
// with mode 0400 (memfds are created 0777), so reopening
// /proc/self/fd/N for writing, or at all, fails for any other uid.
//
// Single-threaded: the daemon's event loop owns it.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/page_placement.hpp"
#include "cxlpool/kvcache/store.hpp"

namespace cxlpool::daemon {

struct KvViewTier {
  uint64_t bytes = 0;  // the arena's size (whole slots); 0: no arena on this tier
  int numa_node = -1;  // bind the views here; -1: no binding
};

// Member, and its metric's name after "kv.".
// clang-format off
#define CXLPOOL_KV_VIEW_COUNTERS(X)                                                              \
  X(views,        "views")             /* namespaces with views */                               \
  X(punches,      "view_punches")      /* slots taken from one namespace's view for another's */ \
  /* punches the kernel refused (the old view keeps its pages there) */                          \
  X(punch_errors, "view_punch_errors")
// clang-format on

struct KvViewCounters {
  CXLPOOL_KV_VIEW_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_KV_VIEW_COUNTERS)
};

class KvViews final : public kvcache::KvSlotMemory {
 public:
  // tiers[0]: the DRAM arena, tiers[1]: the CXL arena. `placement` may be
  // null (nothing is bound); it must outlive the views. `dir_fd`: the tmpfs
  // directory the views are made in, opened by open_view_dir() (`dir`, its
  // path, for messages; kvstore.view_dir, kv_view_dir.hpp); none: memfds.
  KvViews(uint64_t slot_bytes, std::array<KvViewTier, 2> tiers, hal::PagePlacement* placement,
          UniqueFd dir_fd = {}, std::string dir = {});

  // Creates namespace ns_id's views unless they exist. ENOMEM: no address
  // space for the daemon's mapping (every namespace's views are mapped
  // whole); the memfd/mmap/mbind error otherwise.
  Result<void> ensure(uint32_t ns_id);
  [[nodiscard]] bool has(uint32_t ns_id) const;
  // Read-only descriptors of ns_id's views for a client, DRAM first, one per
  // arena tier. ENOENT: ensure() was never called for it.
  Result<std::vector<UniqueFd>> reader_fds(uint32_t ns_id) const;

  std::byte* slot(kvcache::KvTier tier, uint64_t offset, uint32_t ns_id) override;
  void assign(kvcache::KvTier tier, uint64_t offset, uint32_t ns_id) override;

  // The daemon's mapping of ns_id's view of `tier` (empty: none).
  [[nodiscard]] std::span<std::byte> view_bytes(kvcache::KvTier tier, uint32_t ns_id) const;
  // The namespace whose view backs the slot (0: none yet).
  [[nodiscard]] uint32_t holder(kvcache::KvTier tier, uint64_t offset) const;
  [[nodiscard]] const KvViewCounters& counters() const { return counters_; }

 private:
  struct View {
    UniqueFd fd;
    Mapping mapping;  // the daemon's, read-write
  };
  uint64_t slot_bytes_;
  std::array<KvViewTier, 2> tiers_;
  hal::PagePlacement* placement_;
  UniqueFd dir_fd_;
  std::string dir_;
  std::vector<std::array<View, 2>> views_;   // index = namespace id - 1
  std::vector<uint32_t> holders_[2];         // per tier, per slot: the namespace id
  KvViewCounters counters_;
};

}  // namespace cxlpool::daemon
