// SPDX-License-Identifier: Apache-2.0
#include "kv_views.hpp"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "kv_view_dir.hpp"

namespace cxlpool::daemon {
namespace {

Result<UniqueFd> create_view_memfd(const std::string& name, uint64_t bytes) {
  UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC));
  if (!fd) return fail_errno("memfd_create " + name);
  if (auto ok = finish_view(fd.get(), name, bytes); !ok) return tl::unexpected(ok.error());
  return fd;
}

}  // namespace

KvViews::KvViews(uint64_t slot_bytes, std::array<KvViewTier, 2> tiers, hal::PagePlacement* placement,
                 UniqueFd dir_fd, std::string dir)
    : slot_bytes_(slot_bytes), tiers_(tiers), placement_(placement), dir_fd_(std::move(dir_fd)), dir_(std::move(dir)) {
  for (size_t t = 0; t < 2; ++t) holders_[t].assign(tiers_[t].bytes / slot_bytes_, 0);
}

bool KvViews::has(uint32_t ns_id) const {
  return ns_id != 0 && ns_id <= views_.size() && views_[ns_id - 1][0].mapping.valid();
}

Result<void> KvViews::ensure(uint32_t ns_id) {
  if (ns_id == 0) return fail(EINVAL, "kvstore views: namespace id 0");
  if (has(ns_id)) return {};
  std::array<View, 2> made;
  for (size_t t = 0; t < 2; ++t) {
    const uint64_t bytes = tiers_[t].bytes;
    if (bytes == 0) continue;
    const std::string name = "cxlpool-kv-view-" + std::to_string(ns_id) + (t == 0 ? "-dram" : "-cxl");
    auto fd = dir_fd_ ? create_view_file(dir_fd_.get(), dir_, name, bytes) : create_view_memfd(name, bytes);
    if (!fd) return tl::unexpected(fd.error());
    // MAP_NORESERVE: the view is sparse; its pages come from the arena's
    // slots, not from a reservation of its whole size.
    auto mapping = Mapping::map(bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd->get());
    if (!mapping) {
      const int code = mapping.error().code == EINVAL ? ENOMEM : mapping.error().code;
      return fail(code, "kvstore: mapping namespace " + std::to_string(ns_id) +
                            "'s view of an arena: " + mapping.error().message +
                            " (every opened namespace maps each arena's size)");
    }
    if (placement_ != nullptr && tiers_[t].numa_node >= 0) {
      // The shared policy of the memfd: faults through any mapping,
      // clients' included, allocate on the tier's node.
      auto bound = placement_->bind(mapping->addr(), bytes, tiers_[t].numa_node);
      if (!bound) return tl::unexpected(bound.error());
    }
    made[t].fd = std::move(*fd);
    made[t].mapping = std::move(*mapping);
  }
  if (views_.size() < ns_id) views_.resize(ns_id);
  views_[ns_id - 1] = std::move(made);
  ++counters_.views;
  return {};
}

Result<std::vector<UniqueFd>> KvViews::reader_fds(uint32_t ns_id) const {
  if (!has(ns_id)) return fail(ENOENT, "kvstore: namespace " + std::to_string(ns_id) + " has no views");
  std::vector<UniqueFd> out;
  for (const View& v : views_[ns_id - 1]) {
    if (!v.fd) continue;
    // A new open file description, read-only: the client's mmap can never
    // be PROT_WRITE. The daemon (its owner) may open the 0400 inode.
    const std::string path = "/proc/self/fd/" + std::to_string(v.fd.get());
    UniqueFd ro(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ro) return fail_errno("reopen a namespace view read-only");
    out.push_back(std::move(ro));
  }
  return out;
}

std::byte* KvViews::slot(kvcache::KvTier tier, uint64_t offset, uint32_t ns_id) {
  return views_[ns_id - 1][static_cast<size_t>(tier)].mapping.data() + offset;
}

std::span<std::byte> KvViews::view_bytes(kvcache::KvTier tier, uint32_t ns_id) const {
  const auto t = static_cast<size_t>(tier);
  if (!has(ns_id) || t >= 2 || tiers_[t].bytes == 0) return {};
  return {views_[ns_id - 1][t].mapping.data(), tiers_[t].bytes};
}

uint32_t KvViews::holder(kvcache::KvTier tier, uint64_t offset) const {
  const auto& h = holders_[static_cast<size_t>(tier)];
  const uint64_t i = offset / slot_bytes_;
  return i < h.size() ? h[i] : 0;
}

void KvViews::assign(kvcache::KvTier tier, uint64_t offset, uint32_t ns_id) {
  const size_t t = static_cast<size_t>(tier);
  uint32_t& held = holders_[t][offset / slot_bytes_];
  if (held != ns_id && held != 0) {
    View& was = views_[held - 1][t];
    if (::fallocate(was.fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(slot_bytes_)) == 0) {
      ++counters_.punches;
    } else {
      // Cannot happen on a memfd without seals; if it did, the old pages
      // stay (a leak of memory, not of data: they are the old namespace's
      // own bytes, in its own view).
      ++counters_.punch_errors;
    }
  }
  held = ns_id;
}

}  // namespace cxlpool::daemon
