// SPDX-License-Identifier: Apache-2.0
// The memory pool: regions (memfds placed on a tier and mapped by the
// daemon), the names of named regions, handles held by clients, per-uid
// quotas and exact per-tier accounting. Single-threaded: the daemon's event
// loop owns it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/page_placement.hpp"
#include "cxlpool/proto/messages.hpp"
#include "tier.hpp"

namespace cxlpool::daemon {

struct Backing {
  UniqueFd fd;
  uint64_t size = 0;        // rounded up to page_size
  uint32_t page_size = 4096;
};

// Creates the file behind a region (memfd, MFD_HUGETLB memfd or a hugetlbfs
// file, as the tier and flags say). Injected so unit tests can count calls.
using BackingFactory =
    std::function<Result<Backing>(const Tier& tier, const std::string& debug_name, uint64_t size, bool hugetlb)>;

struct Region {
  uint64_t id = 0;
  proto::RegionKind kind = proto::RegionKind::kLeased;
  std::string name;
  uint32_t tier_id = 0;
  uint64_t size = 0;
  uint32_t page_size = 4096;
  bool hugetlb = false;
  uid_t owner_uid = 0;
  gid_t owner_gid = 0;
  uint32_t mode = 0600;
  uint64_t lease_client = 0;  // leased: the client; named: 0
  uint32_t handles = 0;       // handles held by clients
  bool unlinked = false;      // named region whose name is gone
  bool migrating = false;     // pages are being moved by the migration worker
  bool destroy_pending = false;  // released while migrating: destroyed when the move ends
  uint32_t page_moves = 0;    // tiering page-move batches using the mapping right now
  // Owned by a daemon service (the KV store's arenas): charged to its tier
  // but to no uid's quota; no client may map it writable, unlink it or move
  // its pages, whatever its mode or their admin rights.
  bool system = false;
  // A system region made on a client's behalf (a shared model): charged to
  // its owner's quota like a client's region.
  bool charge_owner = false;
  // The owning service is still writing its contents (a model's tensors
  // being copied in): no client may open it by name until it is done, so
  // nobody maps half-written bytes.
  bool filling = false;
  UniqueFd fd;
  Mapping mapping;            // the daemon's own mapping, used to place and move pages
};

// A page move to run outside the pool's thread. It holds only what the
// move needs; the region stays mapped until finish_migration.
struct MigrationJob {
  uint64_t region_id = 0;
  uint32_t from_tier = 0;
  uint32_t to_tier = 0;
  void* addr = nullptr;
  size_t length = 0;
  size_t page_size = 4096;
  int node = -1;  // -1: nothing to move (no placement backend or no node)
  bool move_all = false;
  uint64_t elapsed_ns = 0;

  Result<hal::MoveStats> run(hal::PagePlacement* placement);
};

struct Requester {
  uint64_t client_id = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups
  bool admin = false;
};

struct CreateSpec {
  uint32_t tier_id = 0;
  uint64_t size = 0;
  uint32_t flags = 0;  // proto::kAlloc*
  proto::RegionKind kind = proto::RegionKind::kLeased;
  std::string name;    // named regions
  uint32_t mode = 0600;
  bool system = false;  // see Region::system
  bool charge_owner = false;  // see Region::charge_owner; the requester's quota is checked
  // A file the caller already filled (a checkpoint image) to hold instead
  // of a new backing: the pool keeps a duplicate of it; `size` is its size.
  int adopt_fd = -1;
};

struct PoolLimits {
  uint64_t max_region_size = 64ull << 30;
  uint64_t quota_default_bytes = 0;  // 0: unlimited
  std::vector<QuotaRule> quota_rules;
};

// Each pool counter once: its member, and its metric's name after "pool.".
// clang-format off
#define CXLPOOL_POOL_COUNTERS(X)                      \
  X(regions_created,        "regions_created")        \
  X(regions_destroyed,      "regions_destroyed")      \
  X(bytes_created,          "created_bytes")          \
  X(alloc_failures,         "alloc_failures")         \
  X(quota_rejections,       "quota_rejections")       \
  X(capacity_rejections,    "capacity_rejections")    \
  X(placement_checks,       "placement_checks")       \
  X(placement_mismatches,   "placement_mismatches")   \
  X(migrations,             "migrations")             \
  X(migrated_pages,         "migrated_pages")         \
  X(migrated_bytes,         "migrated_bytes")         \
  X(migration_failed_pages, "migration_failed_pages")
// clang-format on

struct PoolCounters {
  CXLPOOL_POOL_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_POOL_COUNTERS)
};

class RegionPool {
 public:
  // `placement` may be null (no NUMA backend): regions are then not bound.
  RegionPool(std::vector<Tier> tiers, hal::Topology topology, BackingFactory backing,
             hal::PagePlacement* placement, PoolLimits limits);
  ~RegionPool();

  // Creates a region with one handle for the requester.
  Result<Region*> create(const CreateSpec& spec, const Requester& who);
  // Opens a named region (checks its mode); adds one handle. `read_proved`:
  // the caller has established that `who` may read it (a client that passed
  // descriptors of a shared model's files), so a read-only open skips the
  // mode check.
  Result<Region*> open_named(const std::string& name, bool writable, const Requester& who,
                             bool read_proved = false);
  // Removes a name (owner or admin); the region goes with its last handle.
  Result<void> unlink_named(const std::string& name, const Requester& who);
  // Drops one handle; destroys the region when nothing refers to it.
  void release_handle(uint64_t region_id);
  // The daemon service that owns a system region is done with it: its name
  // goes and the daemon's handle is dropped; clients' handles keep the pages
  // (still read-only for them) until they go. ENOENT: no such region;
  // EINVAL: not a system region.
  Result<void> drop_system(uint64_t region_id);

  // Migration in two steps so the page moves can run off the event loop:
  // begin validates, reserves the region's size on the target tier (it
  // counts on both tiers until the move ends), re-binds future faults to the
  // target node and marks the region busy; the caller then moves the pages
  // (MigrationJob::run) and calls finish, which releases the source tier.
  Result<MigrationJob> begin_migration(uint64_t region_id, uint32_t target_tier, bool move_all);
  proto::MigrateReply finish_migration(const MigrationJob& job, const Result<hal::MoveStats>& moved);
  // begin + run + finish on the calling thread.
  Result<proto::MigrateReply> migrate(uint64_t region_id, uint32_t target_tier, bool move_all);

  // The tiering engine moves single pages through the daemon's mapping off
  // the event loop: hold keeps the mapping alive (a release meanwhile is
  // deferred, a whole-region migration refused with EBUSY) until the
  // matching end. ENOENT for a missing region, EBUSY while it migrates.
  Result<Region*> hold_for_page_moves(uint64_t region_id);
  void end_page_moves(uint64_t region_id);

  Region* find(uint64_t region_id);
  const Region* find(uint64_t region_id) const;
  // Every id below this one has been given to a region; none above it yet.
  uint64_t next_id() const { return next_id_; }
  const std::map<uint64_t, std::unique_ptr<Region>>& regions() const { return regions_; }
  const std::vector<Tier>& tiers() const { return tiers_; }
  const hal::Topology& topology() const { return topology_; }
  void refresh_free_memory(const SysfsRoot& root);
  const PoolCounters& counters() const { return counters_; }
  uint64_t bytes_allocated() const;
  // Bytes charged to `uid` on `tier_id`.
  uint64_t quota_used(uid_t uid, uint32_t tier_id) const;
  // 0: unlimited.
  uint64_t quota_limit(uid_t uid, uint32_t tier_id) const;

  // Reloadable limits (SIGHUP).
  void set_limits(PoolLimits limits) { limits_ = std::move(limits); }

  // A read-only reopen of the region's file for a read-only handle: the
  // client can then only map it PROT_READ. (Writable handles carry the
  // region's own descriptor.)
  Result<UniqueFd> read_only_fd(const Region& region) const;

  // Releases every region (shutdown).
  void clear();

 private:
  Result<void> admit(uint32_t tier_id, uint64_t size, uid_t uid, bool quota = true);
  Result<void> place(Region& region, const Tier& tier, bool populate);
  void destroy(uint64_t region_id);
  void charge(uid_t uid, uint32_t tier_id, int64_t delta);
  void charge(const Region& region, int64_t delta);

  std::vector<Tier> tiers_;
  hal::Topology topology_;
  BackingFactory backing_;
  hal::PagePlacement* placement_;
  PoolLimits limits_;
  PoolCounters counters_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::unique_ptr<Region>> regions_;
  std::unordered_map<std::string, uint64_t> names_;
  std::map<std::pair<uid_t, uint32_t>, uint64_t> charged_;
};

// Unix permission check for a named region: owner bits, group bits (primary
// or supplementary group), other bits; admins pass.
bool mode_allows(const Region& region, const Requester& who, bool write);

}  // namespace cxlpool::daemon
