// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/huge_pages.hpp"

#include "cxlpool/hal/meminfo.hpp"

namespace cxlpool::hal {

Result<HugePagePool> read_huge_page_pool(const SysfsRoot& root) {
  constexpr const char* kMeminfo = "/proc/meminfo";
  constexpr const char* kNrHugepages = "/proc/sys/vm/nr_hugepages";
  auto info = read_meminfo(root, kMeminfo);
  if (!info) return tl::unexpected(info.error());
  const std::string file = root.resolve(kMeminfo).string();
  if (info->find("Hugepagesize") == info->end()) {
    return fail(ENOTSUP, file + ": no Hugepagesize line: kernel without hugetlb support");
  }
  HugePagePool pool;
  struct Field {
    const char* name;
    uint64_t* value;
  };
  for (const Field& f : {Field{"Hugepagesize", &pool.page_size}, Field{"HugePages_Total", &pool.total},
                         Field{"HugePages_Free", &pool.free}, Field{"HugePages_Rsvd", &pool.reserved},
                         Field{"HugePages_Surp", &pool.surplus}}) {
    auto v = meminfo_field(*info, f.name, file);
    if (!v) return tl::unexpected(v.error());
    *f.value = *v;
  }
  if (pool.page_size == 0) return fail(EINVAL, file + ": Hugepagesize is 0");
  // nr_hugepages is absent in some containers; HugePages_Total - surplus is
  // the same number.
  if (root.exists(kNrHugepages)) {
    auto configured = root.read_int(kNrHugepages);
    if (!configured) return tl::unexpected(configured.error());
    if (*configured < 0) return fail(EINVAL, root.resolve(kNrHugepages).string() + ": negative");
    pool.configured = static_cast<uint64_t>(*configured);
  } else {
    pool.configured = pool.total >= pool.surplus ? pool.total - pool.surplus : 0;
  }
  return pool;
}

}  // namespace cxlpool::hal
