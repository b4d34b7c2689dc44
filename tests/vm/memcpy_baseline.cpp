// SPDX-License-Identifier: Apache-2.0
#include "memcpy_baseline.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/units.hpp"
#include "page_placement.hpp"

namespace cxlpool::vmtest {

Result<double> memcpy_mib_per_s(size_t bytes, int repeats, int node) {
  auto src = Mapping::map(bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
  if (!src) return tl::unexpected(src.error());
  auto dst = Mapping::map(bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
  if (!dst) return tl::unexpected(dst.error());
  if (node >= 0) {
    for (Mapping* m : {&*src, &*dst}) {
      if (auto r = bind_range_to_node(m->addr(), bytes, node); !r) return tl::unexpected(r.error());
    }
  }
  std::memset(src->addr(), 0x5a, bytes);
  std::memset(dst->addr(), 0xa5, bytes);

  uint64_t best_ns = UINT64_MAX;
  for (int i = 0; i < repeats; ++i) {
    const uint64_t start = monotonic_ns();
    std::memcpy(dst->addr(), src->addr(), bytes);
    best_ns = std::min(best_ns, monotonic_ns() - start);
  }
  // Keeps the copies from being optimized away.
  if (std::memcmp(dst->addr(), src->addr(), bytes) != 0) return fail(EIO, "memcpy miscopied");
  if (best_ns == 0) best_ns = 1;
  return static_cast<double>(bytes) / static_cast<double>(kMiB) / (static_cast<double>(best_ns) / 1e9);
}

}  // namespace cxlpool::vmtest
