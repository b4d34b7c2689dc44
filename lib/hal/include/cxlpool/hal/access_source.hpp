// SPDX-License-Identifier: Apache-2.0
// Access sources: where the tiering engine learns which memory is hot.
//
// Every source -- client reports from libcxlpool, trace replay through the
// controller model, DAMON, perf memory sampling -- yields the same thing per
// epoch: a list of (location, access count, 64-bit hot-word mask). The M5
// manager consumes these lists without knowing where they came from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/backend.hpp"

namespace cxlpool::hal {

inline constexpr std::uint64_t kAccessPageShift = 12;  // 4 KiB: 64 words of 64 bytes
inline constexpr std::uint64_t kAccessPageBytes = 1ULL << kAccessPageShift;
inline constexpr std::uint64_t kAccessWordShift = 6;

// Which address space PageAccess::address lives in.
enum class AddressSpace : std::uint8_t {
  kPoolRegion = 0,  // owner = pool region id, address = byte offset in the region
  kProcess = 1,     // owner = pid, address = virtual address in that process
  kPhysical = 2,    // owner = 0, address = physical address
  kTrace = 3,       // owner = 0, address = address as recorded in a trace
};

const char* address_space_name(AddressSpace space);

struct PageAccess {
  AddressSpace space = AddressSpace::kTrace;
  std::uint64_t owner = 0;
  std::uint64_t address = 0;  // start of the 4 KiB page (a multiple of kAccessPageBytes)
  std::uint64_t count = 0;    // accesses (or samples, for sampling sources) this epoch, > 0
  std::uint64_t words = 0;    // bit w: bytes [w*64, w*64+64) of the page were touched; 0 = unknown

  // DAMON reports regions, not pages, and one entry per page of a large
  // region would be enormous: a source may report a run of `pages`
  // consecutive pages that each saw `count` accesses. 1 for everything else.
  std::uint64_t pages = 1;
  bool operator==(const PageAccess&) const = default;
};

// What a source is able to tell, so the manager can pick a nominator.
struct AccessSourceTraits {
  bool word_masks = false;        // fills PageAccess::words
  bool exact_counts = false;      // counts are every access, not samples
  bool virtual_addresses = false;  // yields AddressSpace::kProcess locations
};

class AccessSource {
 public:
  virtual ~AccessSource() = default;

  // Stable short name: "client", "trace", "damon", "perf".
  virtual std::string_view name() const = 0;
  virtual AccessSourceTraits traits() const = 0;

  // Appends everything observed since the previous call (one epoch) to
  // `out`. Entries for the same location may repeat; the consumer sums them.
  virtual Result<void> collect(std::vector<PageAccess>& out) = 0;

  // Health and totals for `cxlpoolctl tiering status`: accesses reported,
  // and anything dropped (a full ring, lost samples).
  virtual std::uint64_t accesses_total() const = 0;
  virtual std::uint64_t dropped_total() const { return 0; }
};

// What a program may set when it opens a source through the registry
// (hal::open_access_source). Each driver maps these onto its own
// configuration and keeps its own defaults for everything else.
struct AccessSourceOptions {
  // Where sysfs and procfs are mounted; tests pass fixture trees.
  std::string sysfs_root = "/sys";
  std::string procfs_root = "/proc";
  // damon: read a kdamond that is already running (attach) rather than set
  // one up, and which one; setting one up watches `physical_ranges`
  // ([start, end), 4 KiB aligned).
  bool attach = false;
  std::uint32_t kdamond_index = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> physical_ranges;
};

}  // namespace cxlpool::hal
