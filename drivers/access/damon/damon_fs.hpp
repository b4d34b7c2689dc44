// SPDX-License-Identifier: Apache-2.0
// Reads and writes the DAMON sysfs admin tree below an injectable sysfs root,
// so the adapter runs against fixture copies in tests and "/sys" in
// production. Every value read is validated: sysfs is an ABI we do not
// control, and a fixture may be wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/sysfs_root.hpp"

namespace cxlpool::drivers {

// Relative to the sysfs mount point.
inline constexpr const char* kDamonAdminDir = "/kernel/mm/damon/admin";

class DamonFs {
 public:
  // `sysfs_root` is where sysfs is mounted ("/sys", or a fixture copy).
  explicit DamonFs(std::string sysfs_root);

  // `rel` is relative to the admin directory ("kdamonds/nr_kdamonds"); ""
  // names the admin directory itself.
  std::string path(const std::string& rel) const;
  bool exists(const std::string& rel) const;
  // access(W_OK): never opens the file for writing.
  Result<void> check_writable(const std::string& rel) const;

  // Whole file with surrounding whitespace removed. Errors: the errno of
  // open/read; EFBIG for a file larger than a sysfs page.
  Result<std::string> read_text(const std::string& rel) const;
  // A decimal unsigned 64-bit number. EINVAL for anything else.
  Result<uint64_t> read_u64(const std::string& rel) const;
  // Writes `value` to an existing file (sysfs attributes are never created
  // by writing). Errors: the errno of open/write.
  Result<void> write(const std::string& rel, std::string_view value) const;
  Result<void> write_u64(const std::string& rel, uint64_t value) const;

  // Subdirectories named by a decimal index, in numeric order.
  std::vector<uint64_t> indices(const std::string& rel) const;

 private:
  SysfsRoot root_;
};

// Decimal digits only, no sign, no overflow; surrounding whitespace allowed.
Result<uint64_t> parse_u64(std::string_view text);

}  // namespace cxlpool::drivers
