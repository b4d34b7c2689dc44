// SPDX-License-Identifier: Apache-2.0
#include "backing.hpp"

#include <sys/stat.h>

#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/backend_registry.hpp"
#include "region_memory.hpp"

namespace cxlpool::daemon {

BackingFactory make_backing_factory() {
  return [](const Tier& tier, const std::string& debug_name, uint64_t size, bool hugetlb) -> Result<Backing> {
    Result<UniqueFd> fd = tier.backing == EmulatedBacking::kHugetlbfs
                              ? drivers::create_hugetlbfs_file(tier.hugetlbfs_path, size)
                              : drivers::create_region_memfd(debug_name, hugetlb ? size : round_up(size, 4096), hugetlb);
    if (!fd) return tl::unexpected(fd.error());
    // memfds are created 0777: without this, a client given a read-only handle
    // could reopen it writable through /proc/self/fd/N.
    if (::fchmod(fd->get(), 0600) != 0) return fail_errno("fchmod region file");
    Backing backing;
    if (hugetlb || tier.backing == EmulatedBacking::kHugetlbfs) {
      // The driver rounded the size up to whole huge pages; hugetlbfs
      // reports its page size as the block size.
      struct stat st {};
      if (::fstat(fd->get(), &st) != 0) return fail_errno("fstat region file");
      backing.size = static_cast<uint64_t>(st.st_size);
      backing.page_size = static_cast<uint32_t>(st.st_blksize);
    } else {
      backing.size = round_up(size, 4096);
      backing.page_size = 4096;
    }
    backing.fd = std::move(*fd);
    return backing;
  };
}

std::unique_ptr<hal::PagePlacement> make_page_placement(const hal::Topology& topology) {
  if (!topology.numa_present) return nullptr;
  auto placement = hal::open_page_placement();
  return placement ? std::move(*placement) : nullptr;
}

}  // namespace cxlpool::daemon
