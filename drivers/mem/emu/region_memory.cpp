// SPDX-License-Identifier: Apache-2.0
#include "region_memory.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/huge_pages.hpp"

namespace cxlpool::drivers {
namespace {

constexpr size_t kMaxMemfdName = 249;  // NAME_MAX minus the "memfd:" prefix

std::string no_huge_pages_message(const std::string& what, uint64_t pages, uint64_t page_size) {
  std::string msg = what + ": cannot reserve " + std::to_string(pages) + " huge page(s) of " +
                    format_size(page_size);
  // Suggest a concrete value only for the default size: the pool read from
  // /proc/meminfo describes that size alone.
  auto pool = hal::read_huge_page_pool(SysfsRoot("/"));
  if (pool && pool->page_size == page_size) {
    const uint64_t missing = pages > pool->available() ? pages - pool->available() : 0;
    msg += " (" + std::to_string(pool->available()) + " available): no free huge pages: echo " +
           std::to_string(pool->configured + missing) + " > /proc/sys/vm/nr_hugepages";
  } else {
    msg += ": no free huge pages: echo N > /sys/kernel/mm/hugepages/hugepages-" +
           std::to_string(page_size / 1024) + "kB/nr_hugepages";
  }
  return msg;
}

// Sizes the file and, for hugetlb, takes the reservation now by mapping it
// once: a shared hugetlb reservation stays with the file after munmap.
Result<UniqueFd> size_and_reserve(UniqueFd fd, const std::string& what, uint64_t size,
                                  uint64_t huge_page_size) {
  if (ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    const int err = errno;
    if (huge_page_size != 0 && (err == ENOMEM || err == ENOSPC)) {
      return fail(ENOMEM, no_huge_pages_message(what, size / huge_page_size, huge_page_size));
    }
    return fail(err, errno_message(what + ": ftruncate to " + std::to_string(size), err));
  }
  if (huge_page_size == 0) return fd;
  void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (addr == MAP_FAILED) {
    const int err = errno;
    if (err == ENOMEM || err == ENOSPC) {
      return fail(ENOMEM, no_huge_pages_message(what, size / huge_page_size, huge_page_size));
    }
    return fail(err, errno_message(what + ": reserving huge pages (mmap)", err));
  }
  munmap(addr, size);
  return fd;
}

}  // namespace

Result<UniqueFd> create_region_memfd(const std::string& debug_name, uint64_t size, bool hugetlb) {
  const std::string what = "memfd '" + debug_name + "'";
  if (size == 0) return fail(EINVAL, what + ": size 0");
  uint64_t huge_page_size = 0;
  unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
  if (hugetlb) {
    auto pool = hal::read_huge_page_pool(SysfsRoot("/"));
    if (!pool) return tl::unexpected(pool.error());
    huge_page_size = pool->page_size;
    size = round_up(size, huge_page_size);
    flags |= MFD_HUGETLB;
  }
  const std::string name = debug_name.substr(0, kMaxMemfdName);
  UniqueFd fd(memfd_create(name.c_str(), flags));
  if (!fd) {
    const int err = errno;
    if (hugetlb && (err == ENOMEM || err == ENOSPC)) {
      return fail(ENOMEM, no_huge_pages_message(what, size / huge_page_size, huge_page_size));
    }
    return fail(err, errno_message(what + ": memfd_create", err));
  }
  auto sized = size_and_reserve(std::move(fd), what, size, huge_page_size);
  if (!sized) return sized;
  // Clients receive this file read-write: sealing its size keeps any of them
  // from shrinking it under the others' mappings (SIGBUS) or growing it past
  // what the pool accounted for.
  if (fcntl(sized->get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return fail_errno(what + ": sealing its size");
  }
  return sized;
}

Result<uint64_t> hugetlbfs_page_size(const std::string& mount_dir) {
  struct statfs st {};
  if (statfs(mount_dir.c_str(), &st) != 0) return fail_errno("statfs " + mount_dir);
  if (static_cast<unsigned long>(st.f_type) != HUGETLBFS_MAGIC) {
    return fail(EINVAL, mount_dir + " is not a hugetlbfs mount");
  }
  return static_cast<uint64_t>(st.f_bsize);
}

Result<UniqueFd> create_hugetlbfs_file(const std::string& mount_dir, uint64_t size) {
  const std::string what = "hugetlbfs file in " + mount_dir;
  if (size == 0) return fail(EINVAL, what + ": size 0");
  auto page_size = hugetlbfs_page_size(mount_dir);
  if (!page_size) return tl::unexpected(page_size.error());
  size = round_up(size, *page_size);
  UniqueFd fd(open(mount_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!fd) return fail_errno(what + ": open(O_TMPFILE)");
  return size_and_reserve(std::move(fd), what, size, *page_size);
}

}  // namespace cxlpool::drivers
