// SPDX-License-Identifier: Apache-2.0
#include "region_pool.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/permission_bits.hpp"
#include "cxlpool/common/units.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace cxlpool::daemon {
namespace {

// Permission modes read as the operator wrote them: 0640, not 416.
std::string octal_mode(uint32_t mode) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0%o", mode);
  return buffer;
}

// A filled file the pool takes over as a region's backing: its own
// duplicate, so the caller's descriptor stays the caller's.
Result<Backing> adopt_backing(int fd, uint64_t size) {
  UniqueFd own(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
  if (!own) return fail_errno("duplicating a region's file");
  return Backing{std::move(own), round_up(size, 4096), 4096};
}

// move_pages moves only pages this process maps; a region's pages that a
// client faulted in through its own mapping, or that a checkpoint capture
// wrote into the image's memfd, are in the file but not in the daemon's
// mapping. Maps those (the resident ones only, so that no page is allocated
// for a hole) before the move, stretch by stretch.
void map_resident_pages(void* addr, size_t length) {
  const size_t page = 4096, pages = length / page;
  std::vector<unsigned char> resident(pages);
  if (pages == 0 || ::mincore(addr, length, resident.data()) != 0) return;
  auto* base = static_cast<char*>(addr);
  for (size_t i = 0; i < pages;) {
    if (!(resident[i] & 1)) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < pages && (resident[end] & 1)) ++end;
    (void)::madvise(base + i * page, (end - i) * page, MADV_POPULATE_READ);  // best effort: absent pages stay absent
    i = end;
  }
}

}  // namespace

RegionPool::RegionPool(std::vector<Tier> tiers, hal::Topology topology, BackingFactory backing,
                       hal::PagePlacement* placement, PoolLimits limits)
    : tiers_(std::move(tiers)),
      topology_(std::move(topology)),
      backing_(std::move(backing)),
      placement_(placement),
      limits_(std::move(limits)) {}

RegionPool::~RegionPool() { clear(); }

void RegionPool::clear() {
  // Callers stop the migration worker first, so no move is still running.
  for (auto& [id, region] : regions_) {
    region->migrating = false;
    region->page_moves = 0;
  }
  while (!regions_.empty()) destroy(regions_.begin()->first);
  names_.clear();
}

Region* RegionPool::find(uint64_t region_id) {
  auto it = regions_.find(region_id);
  return it == regions_.end() ? nullptr : it->second.get();
}

const Region* RegionPool::find(uint64_t region_id) const {
  auto it = regions_.find(region_id);
  return it == regions_.end() ? nullptr : it->second.get();
}

Result<Region*> RegionPool::hold_for_page_moves(uint64_t region_id) {
  Region* region = find(region_id);
  if (region == nullptr || region->destroy_pending) {
    return fail(ENOENT, "no region with id " + std::to_string(region_id));
  }
  if (region->migrating) return fail(EBUSY, "region " + std::to_string(region_id) + " is being migrated");
  if (region->system) return fail(EPERM, "region " + std::to_string(region_id) + " belongs to the daemon");
  ++region->page_moves;
  return region;
}

void RegionPool::end_page_moves(uint64_t region_id) {
  Region* region = find(region_id);
  if (region == nullptr || region->page_moves == 0) return;
  if (--region->page_moves == 0 && region->destroy_pending) destroy(region_id);
}

uint64_t RegionPool::bytes_allocated() const {
  uint64_t total = 0;
  for (const auto& tier : tiers_) total += tier.used;
  return total;
}

uint64_t RegionPool::quota_used(uid_t uid, uint32_t tier_id) const {
  auto it = charged_.find({uid, tier_id});
  return it == charged_.end() ? 0 : it->second;
}

uint64_t RegionPool::quota_limit(uid_t uid, uint32_t tier_id) const {
  const std::string& tier_name = tiers_.at(tier_id).name;
  // A rule for this exact tier wins over a "*" rule, which wins over the default.
  const QuotaRule* wildcard = nullptr;
  for (const auto& rule : limits_.quota_rules) {
    if (rule.uid != uid) continue;
    if (rule.tier == tier_name) return rule.bytes;
    if (rule.tier == "*") wildcard = &rule;
  }
  return wildcard != nullptr ? wildcard->bytes : limits_.quota_default_bytes;
}

void RegionPool::charge(const Region& region, int64_t delta) {
  if (!region.system || region.charge_owner) {
    charge(region.owner_uid, region.tier_id, delta);
    return;
  }
  Tier& tier = tiers_[region.tier_id];
  tier.used = static_cast<uint64_t>(static_cast<int64_t>(tier.used) + delta);
}

void RegionPool::charge(uid_t uid, uint32_t tier_id, int64_t delta) {
  auto& used = charged_[{uid, tier_id}];
  used = static_cast<uint64_t>(static_cast<int64_t>(used) + delta);
  if (used == 0) charged_.erase({uid, tier_id});
  Tier& tier = tiers_[tier_id];
  tier.used = static_cast<uint64_t>(static_cast<int64_t>(tier.used) + delta);
}

Result<void> RegionPool::admit(uint32_t tier_id, uint64_t size, uid_t uid, bool quota) {
  const Tier& tier = tiers_[tier_id];
  const uint64_t limit = quota ? quota_limit(uid, tier_id) : 0;
  const uint64_t charged = quota_used(uid, tier_id);
  if (limit != 0 && charged + size > limit) {
    ++counters_.quota_rejections;
    return fail(EDQUOT, "quota exceeded on tier " + tier.name + ": uid " + std::to_string(uid) +
                            " has " + format_size(charged) + " of " + format_size(limit) +
                            ", asked for " + format_size(size) + " more");
  }
  const uint64_t free = tier_free_bytes(tier, topology_);
  if (size > free) {
    ++counters_.capacity_rejections;
    return fail(ENOSPC, "tier " + tier.name + " is full: " + format_size(free) + " free, asked for " +
                            format_size(size));
  }
  return {};
}

Result<void> RegionPool::place(Region& region, const Tier& tier, bool populate) {
  // With a single memory node there is nowhere else for a page to go, and
  // the bind would only add a system call to every allocation.
  if (placement_ != nullptr && tier.numa_node >= 0 && topology_.nodes.size() > 1) {
    auto bound = placement_->bind(region.mapping.addr(), region.size, tier.numa_node);
    if (!bound) return tl::unexpected(bound.error());
  }
  if (!populate) return {};
  if (::madvise(region.mapping.addr(), region.size, MADV_POPULATE_WRITE) != 0) {
    const int code = errno;
    return fail(code == EFAULT || code == EINVAL ? ENOMEM : code,
                errno_message("populating " + format_size(region.size) + " on tier " + tier.name, code));
  }
  if (placement_ == nullptr || tier.numa_node < 0) return {};
  ++counters_.placement_checks;
  auto nodes = placement_->query(region.mapping.addr(), region.size, region.page_size);
  if (!nodes) return tl::unexpected(nodes.error());
  const auto off = std::count_if(nodes->begin(), nodes->end(),
                                 [&](int node) { return node != tier.numa_node; });
  if (off > 0) {
    ++counters_.placement_mismatches;
    return fail(EIO, "placement check failed: " + std::to_string(off) + " of " +
                         std::to_string(nodes->size()) + " pages are not on node " +
                         std::to_string(tier.numa_node));
  }
  return {};
}

Result<Region*> RegionPool::create(const CreateSpec& spec, const Requester& who) {
  auto failed = [&](Error e) -> Result<Region*> {
    ++counters_.alloc_failures;
    return tl::unexpected(std::move(e));
  };
  if (spec.tier_id >= tiers_.size()) {
    return failed({ENOENT, "no tier with id " + std::to_string(spec.tier_id)});
  }
  if (spec.size == 0) return failed({EINVAL, "size must be > 0"});
  if (spec.size > limits_.max_region_size) {
    return failed({E2BIG, "size " + format_size(spec.size) + " exceeds max_region_size " +
                              format_size(limits_.max_region_size)});
  }
  if (spec.kind == proto::RegionKind::kNamed) {
    if (!proto::valid_region_name(spec.name)) return failed({EINVAL, "invalid region name"});
    if (names_.count(spec.name) != 0) {
      return failed({EEXIST, "a named region '" + spec.name + "' exists already"});
    }
  }
  const Tier& tier = tiers_[spec.tier_id];
  const bool hugetlb = (spec.flags & proto::kAllocHugetlb) != 0 || tier.backing == EmulatedBacking::kHugetlbfs;
  // Admission uses the requested size rounded to base pages; the backing may
  // round further for huge pages, which is re-checked below.
  const bool quota = !spec.system || spec.charge_owner;
  if (auto ok = admit(spec.tier_id, round_up(spec.size, 4096), who.uid, quota); !ok) {
    return failed(ok.error());
  }

  const std::string debug_name = spec.kind == proto::RegionKind::kNamed ? "cxlpool:" + spec.name
                                                                         : "cxlpool:lease";
  auto backing = spec.adopt_fd >= 0 ? adopt_backing(spec.adopt_fd, spec.size)
                                     : backing_(tier, debug_name, spec.size, hugetlb);
  if (!backing) return failed(backing.error());
  if (backing->size != round_up(spec.size, 4096)) {
    if (auto ok = admit(spec.tier_id, backing->size, who.uid, quota); !ok) return failed(ok.error());
  }

  auto region = std::make_unique<Region>();
  region->id = next_id_++;
  region->kind = spec.kind;
  region->name = spec.name;
  region->tier_id = spec.tier_id;
  region->size = backing->size;
  region->page_size = backing->page_size;
  region->hugetlb = hugetlb && spec.adopt_fd < 0;
  region->owner_uid = who.uid;
  region->owner_gid = who.gid;
  region->mode = spec.mode & proto::kModeMask;
  region->lease_client = spec.kind == proto::RegionKind::kLeased ? who.client_id : 0;
  region->handles = 1;
  region->system = spec.system;
  region->charge_owner = spec.system && spec.charge_owner;
  region->fd = std::move(backing->fd);
  auto mapping = Mapping::map(region->size, PROT_READ | PROT_WRITE, MAP_SHARED, region->fd.get());
  if (!mapping) return failed(mapping.error());
  region->mapping = std::move(*mapping);
  if (auto placed = place(*region, tier, (spec.flags & proto::kAllocPopulate) != 0); !placed) {
    return failed(placed.error());
  }

  charge(*region, static_cast<int64_t>(region->size));
  ++counters_.regions_created;
  counters_.bytes_created += region->size;
  Region* raw = region.get();
  if (spec.kind == proto::RegionKind::kNamed) names_[spec.name] = raw->id;
  regions_[raw->id] = std::move(region);
  return raw;
}

bool mode_allows(const Region& region, const Requester& who, bool write) {
  if (who.admin) return true;
  const uint32_t bits = permission_bits(region.mode, region.owner_uid, region.owner_gid, who.uid, who.gid,
                                        who.groups);
  return (bits & kPermissionRead) != 0 && (!write || (bits & kPermissionWrite) != 0);
}

Result<Region*> RegionPool::open_named(const std::string& name, bool writable, const Requester& who,
                                       bool read_proved) {
  auto it = names_.find(name);
  if (it == names_.end()) return fail(ENOENT, "no named region '" + name + "'");
  Region* region = find(it->second);
  if (region->system && writable) {
    return fail(EPERM, "'" + name + "' belongs to the daemon and is opened read-only only");
  }
  if (region->filling) return fail(EAGAIN, "'" + name + "' is still being filled by the daemon; try again");
  if (!(read_proved && !writable) && !mode_allows(*region, who, writable)) {
    return fail(EACCES, "mode " + octal_mode(region->mode) + " of '" + name + "' denies " +
                            (writable ? "read-write" : "read") + " access to uid " +
                            std::to_string(who.uid));
  }
  ++region->handles;
  return region;
}

Result<void> RegionPool::unlink_named(const std::string& name, const Requester& who) {
  auto it = names_.find(name);
  if (it == names_.end()) return fail(ENOENT, "no named region '" + name + "'");
  Region* region = find(it->second);
  if (region->system) return fail(EPERM, "'" + name + "' belongs to the daemon and cannot be unlinked");
  if (!who.admin && who.uid != region->owner_uid) {
    return fail(EPERM, "only the owner (uid " + std::to_string(region->owner_uid) +
                           ") or an admin may unlink '" + name + "'");
  }
  names_.erase(it);
  region->unlinked = true;
  if (region->handles == 0) destroy(region->id);
  return {};
}

void RegionPool::release_handle(uint64_t region_id) {
  Region* region = find(region_id);
  if (region == nullptr || region->handles == 0) return;
  --region->handles;
  if (region->handles == 0 && (region->kind == proto::RegionKind::kLeased || region->unlinked)) {
    destroy(region_id);
  }
}

Result<void> RegionPool::drop_system(uint64_t region_id) {
  Region* region = find(region_id);
  if (region == nullptr) return fail(ENOENT, "no region " + std::to_string(region_id));
  if (!region->system) return fail(EINVAL, "region " + std::to_string(region_id) + " is not the daemon's");
  if (region->kind == proto::RegionKind::kNamed && !region->unlinked) {
    names_.erase(region->name);
    region->unlinked = true;
  }
  if (region->handles > 0) {
    release_handle(region_id);
  } else {
    destroy(region_id);
  }
  return {};
}

void RegionPool::destroy(uint64_t region_id) {
  auto it = regions_.find(region_id);
  if (it == regions_.end()) return;
  Region& region = *it->second;
  if (region.migrating || region.page_moves > 0) {
    // A worker is moving pages through our mapping: keep it until it ends.
    region.destroy_pending = true;
    if (region.kind == proto::RegionKind::kNamed && !region.unlinked) {
      names_.erase(region.name);
      region.unlinked = true;
    }
    return;
  }
  charge(region, -static_cast<int64_t>(region.size));
  if (region.kind == proto::RegionKind::kNamed && !region.unlinked) names_.erase(region.name);
  ++counters_.regions_destroyed;
  regions_.erase(it);
}

Result<UniqueFd> RegionPool::read_only_fd(const Region& region) const {
  const std::string path = "/proc/self/fd/" + std::to_string(region.fd.get());
  UniqueFd ro(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ro) return fail_errno("reopen region read-only");
  return ro;
}

void RegionPool::refresh_free_memory(const SysfsRoot& root) {
  (void)hal::refresh_free_memory(root, topology_);
}

Result<hal::MoveStats> MigrationJob::run(hal::PagePlacement* placement) {
  const uint64_t start = monotonic_ns();
  Result<hal::MoveStats> moved = hal::MoveStats{};
  if (placement != nullptr && node >= 0) {
    map_resident_pages(addr, length);
    moved = placement->move(addr, length, page_size, node, move_all);
  } else {
    moved->pages_total = length / page_size;
    moved->pages_absent = moved->pages_total;
  }
  elapsed_ns = monotonic_ns() - start;
  return moved;
}

Result<MigrationJob> RegionPool::begin_migration(uint64_t region_id, uint32_t target_tier, bool move_all) {
  Region* region = find(region_id);
  if (region == nullptr || region->destroy_pending) {
    return fail(ENOENT, "no region with id " + std::to_string(region_id));
  }
  if (target_tier >= tiers_.size()) return fail(ENOENT, "no tier with id " + std::to_string(target_tier));
  if (region->system) {
    return fail(EPERM, "region " + std::to_string(region_id) + " belongs to the daemon and stays on its tier");
  }
  if (region->migrating) return fail(EBUSY, "region " + std::to_string(region_id) + " is being migrated already");
  if (region->page_moves > 0) {
    return fail(EBUSY, "region " + std::to_string(region_id) + " has tiering page moves in progress; retry");
  }
  MigrationJob job;
  job.region_id = region_id;
  job.from_tier = region->tier_id;
  job.to_tier = target_tier;
  job.addr = region->mapping.addr();
  job.length = region->size;
  job.page_size = region->page_size;
  job.move_all = move_all;
  if (target_tier == region->tier_id) return job;  // nothing to move, nothing to charge
  const Tier& to = tiers_[target_tier];
  if (auto ok = admit(target_tier, region->size, region->owner_uid); !ok) return tl::unexpected(ok.error());
  if (placement_ != nullptr && to.numa_node >= 0) {
    // New faults go to the target before the present pages move.
    if (auto bound = placement_->bind(region->mapping.addr(), region->size, to.numa_node); !bound) {
      return tl::unexpected(bound.error());
    }
    job.node = to.numa_node;
  }
  charge(region->owner_uid, target_tier, static_cast<int64_t>(region->size));
  region->migrating = true;
  return job;
}

proto::MigrateReply RegionPool::finish_migration(const MigrationJob& job, const Result<hal::MoveStats>& moved) {
  proto::MigrateReply reply;
  reply.region_id = job.region_id;
  reply.from_tier = job.from_tier;
  reply.to_tier = job.to_tier;
  reply.pages_total = job.length / job.page_size;
  reply.elapsed_ns = job.elapsed_ns;
  Region* region = find(job.region_id);
  if (job.from_tier == job.to_tier || region == nullptr) {
    reply.pages_already = reply.pages_total;
    return reply;
  }
  region->migrating = false;
  if (moved) {
    reply.pages_moved = moved->pages_moved;
    reply.pages_already = moved->pages_already;
    reply.pages_absent = moved->pages_absent;
    reply.pages_failed = moved->pages_failed;
  } else {
    reply.pages_failed = reply.pages_total;
  }
  reply.bytes_moved = reply.pages_moved * job.page_size;
  // The region now belongs to the target tier even if some pages could not
  // move: its policy already sends every new fault there.
  charge(region->owner_uid, job.from_tier, -static_cast<int64_t>(region->size));
  region->tier_id = job.to_tier;
  ++counters_.migrations;
  counters_.migrated_pages += reply.pages_moved;
  counters_.migrated_bytes += reply.bytes_moved;
  counters_.migration_failed_pages += reply.pages_failed;
  if (region->destroy_pending) destroy(region->id);
  return reply;
}

Result<proto::MigrateReply> RegionPool::migrate(uint64_t region_id, uint32_t target_tier, bool move_all) {
  auto job = begin_migration(region_id, target_tier, move_all);
  if (!job) return tl::unexpected(job.error());
  auto moved = job->run(placement_);
  auto reply = finish_migration(*job, moved);
  if (!moved) return tl::unexpected(moved.error());
  return reply;
}

}  // namespace cxlpool::daemon
