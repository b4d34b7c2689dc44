// SPDX-License-Identifier: Apache-2.0
#include "emu_probe.hpp"

#include <sys/mman.h>

#include <string>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/huge_pages.hpp"

namespace cxlpool::drivers {

hal::BackendReport probe_emu() {
  hal::BackendReport report{"MemTier", "emu", hal::BackendState::kAvailable, ""};
  // Every emulated region is a memfd, so one must be creatable.
  UniqueFd fd(memfd_create("cxlpool-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) {
    report.state = hal::BackendState::kFailed;
    report.detail = errno_message("memfd_create", errno);
    return report;
  }
  report.detail = "memfd";
  auto pool = hal::read_huge_page_pool(SysfsRoot("/"));
  if (!pool) {
    report.detail += "; hugetlb unavailable: " + pool.error().message;
  } else if (pool->available() == 0) {
    report.detail += "; no free huge pages (nr_hugepages=" + std::to_string(pool->configured) +
                     ", " + format_size(pool->page_size) + ")";
  } else {
    report.detail += "; hugetlb: " + std::to_string(pool->available()) + " of " +
                     std::to_string(pool->total) + " huge pages of " +
                     format_size(pool->page_size) + " free";
  }
  return report;
}

}  // namespace cxlpool::drivers
