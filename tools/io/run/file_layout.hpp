// SPDX-License-Identifier: Apache-2.0
// Before a job runs, its files must hold the region it touches: fio "lays
// out" a file a read job needs by writing it, and extends one a write job
// needs. Block devices are used as they are.
#pragma once

#include <cstdint>
#include <string>

#include "cxlpool/common/result.hpp"

namespace cxlpool::io {

struct FileFacts {
  bool exists = false;
  bool is_block_device = false;
  bool is_char_device = false;  // /dev/null, /dev/zero: no size, nothing to lay out
  std::uint64_t size = 0;
};
FileFacts file_facts(const std::string& path);

// Makes `path` at least `bytes` long. When `fill` (a job will read what it
// does not write), the missing part is written with pseudo-random data and
// synced, so reads hit real blocks rather than holes; otherwise it is only
// extended.
Result<void> lay_out_file(const std::string& path, std::uint64_t bytes, bool fill);

}  // namespace cxlpool::io
