// SPDX-License-Identifier: Apache-2.0
// Backing files for pool regions: a memfd (optionally MFD_HUGETLB) or an
// unnamed file on a hugetlbfs mount. The daemon maps them, places them with
// PagePlacement and passes the fd to clients.
#pragma once

#include <cstdint>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::drivers {

// memfd_create(MFD_CLOEXEC | MFD_ALLOW_SEALING [| MFD_HUGETLB]) sized with
// ftruncate. `debug_name` shows in /proc/PID/fd as "memfd:<name>" (cut to
// the kernel's 249-byte limit). With `hugetlb` the size is rounded up to the
// default huge page size and the pages are reserved now (a shared hugetlb
// reservation belongs to the file), so mapping it later cannot fail for lack
// of huge pages; the pages themselves are allocated at first touch, after the
// caller's mbind.
// Errors: EINVAL (size 0), ENOMEM "no free huge pages: echo N >
// /proc/sys/vm/nr_hugepages" when the reservation fails, ENOTSUP (kernel
// without hugetlb), or the errno of memfd_create/ftruncate.
Result<UniqueFd> create_region_memfd(const std::string& debug_name, uint64_t size, bool hugetlb);

// An O_TMPFILE file in the hugetlbfs mount `mount_dir` (whose page size may
// differ from the default, e.g. 1 GiB), sized and reserved like a hugetlb
// memfd. Errors: EINVAL (size 0, or `mount_dir` is not hugetlbfs), ENOMEM as
// above, or the errno of statfs/open/ftruncate.
Result<UniqueFd> create_hugetlbfs_file(const std::string& mount_dir, uint64_t size);

// Page size of a hugetlbfs mount. EINVAL when `mount_dir` is not hugetlbfs.
Result<uint64_t> hugetlbfs_page_size(const std::string& mount_dir);

}  // namespace cxlpool::drivers
