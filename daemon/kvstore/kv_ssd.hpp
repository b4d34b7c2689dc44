// SPDX-License-Identifier: Apache-2.0
// The KV store's SSD tier as configured: the file (created or grown to
// ssd_bytes, allocated in full) or block device behind it, opened through io_uring or the posix
// engine, and the region log on it scanned back into an index.
#pragma once

#include <memory>
#include <string>

#include "../config.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/kvcache/ssd_store.hpp"

namespace cxlpool::daemon {

struct KvSsd {
  std::unique_ptr<kvcache::SsdStore> store;
  // An exclusive flock on the path for as long as the daemon runs: two
  // daemons writing one log would corrupt each other's regions.
  UniqueFd lock;
  std::string engine;  // "io_uring" or "posix"
  bool direct = true;  // O_DIRECT; false where the file system refuses it
};

// The path is never followed through a symbolic link and must be a regular
// file or a block device; a new file is created 0600 and every regular file
// gets its blocks allocated up front. Errors: ELOOP: a symbolic link;
// EINVAL: a new file without ssd_bytes, or neither a regular file nor a
// block device; ENOENT: the directory of a new file does not exist; EEXIST:
// non-empty and not a KV log, without ssd_format_foreign (with it, the
// foreign region heads are cleared); EBUSY: another process holds it (a
// second daemon); posix_fallocate's error (ENOSPC: no room for ssd_bytes);
// the device's and the log's own errors otherwise.
Result<KvSsd> open_kv_ssd(const KvStoreSection& config);

}  // namespace cxlpool::daemon
