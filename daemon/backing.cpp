// SPDX-License-Identifier: Apache-2.0
#include "backing.hpp"

#include <sys/stat.h>

#include "cxlpool_build_config.h"
#include "region_memory.hpp"
#if CXLPOOL_HAVE_NUMA
#include "numa_page_placement.hpp"
#include "numa_probe.hpp"
#endif

namespace cxlpool::daemon {

BackingFactory make_backing_factory() {
  return [](const Tier& tier, const std::string& debug_name, uint64_t size, bool hugetlb) -> Result<Backing> {
    Result<UniqueFd> fd = tier.backing == EmulatedBacking::kHugetlbfs
                              ? drivers::create_hugetlbfs_file(tier.hugetlbfs_path, size)
                              : drivers::create_region_memfd(debug_name, size, hugetlb);
    if (!fd) return tl::unexpected(fd.error());
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return fail_errno("fstat region file");
    Backing backing;
    backing.size = static_cast<uint64_t>(st.st_size);
    // hugetlbfs reports its page size as the block size.
    backing.page_size = hugetlb || tier.backing == EmulatedBacking::kHugetlbfs
                            ? static_cast<uint32_t>(st.st_blksize)
                            : 4096;
    backing.fd = std::move(*fd);
    return backing;
  };
}

std::unique_ptr<hal::PagePlacement> make_page_placement(const hal::Topology& topology) {
#if CXLPOOL_HAVE_NUMA
  if (!topology.numa_present) return nullptr;
  if (drivers::probe_numa().state != hal::BackendState::kAvailable) return nullptr;
  return drivers::make_numa_page_placement();
#else
  (void)topology;
  return nullptr;
#endif
}

}  // namespace cxlpool::daemon
