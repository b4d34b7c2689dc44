// SPDX-License-Identifier: Apache-2.0
#include "kv_ssd.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "../logging.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool_build_config.h"
#if CXLPOOL_HAVE_POSIX
#include "posix_block_device.hpp"
#endif
#if CXLPOOL_HAVE_URING
#include "uring_block_device.hpp"
#endif

namespace cxlpool::daemon {
namespace {

// Reads in flight on the device; the store keeps at most this many.
constexpr uint32_t kSsdQueueDepth = 128;
// Region bytes the log keeps in flight while the next region fills: what
// fio keeps in flight at bs=2M iodepth=32, which saturates the disks here.
constexpr uint64_t kSsdWriteBytesInFlight = 64ull << 20;

Result<std::unique_ptr<hal::BlockDevice>> open_with(KvSsdEngine engine, const std::string& path,
                                                    const hal::BlockOpenOptions& options, std::string& used) {
  [[maybe_unused]] auto log = logger("kvstore");
  if (engine != KvSsdEngine::kPosix) {
#if CXLPOOL_HAVE_URING
    auto device = drivers::open_uring_block_device(path, options);
    if (device) {
      used = "io_uring";
      return device;
    }
    if (engine == KvSsdEngine::kIoUring || !drivers::uring_refused(device.error())) {
      return tl::unexpected(device.error());
    }
    log->warn("kvstore: io_uring refused ({}); using the posix engine for {}", device.error().message, path);
#else
    if (engine == KvSsdEngine::kIoUring) {
      return fail(ENOTSUP, "kvstore.ssd_engine = \"io_uring\" but this build has no io_uring engine (liburing)");
    }
#endif
  }
#if CXLPOOL_HAVE_POSIX
  used = "posix";
  return drivers::open_posix_block_device(path, options);
#else
  return fail(ENOTSUP, "this build has no posix block engine");
#endif
}

}  // namespace

Result<KvSsd> open_kv_ssd(const KvStoreSection& config) {
  auto log = logger("kvstore");
  const std::string& path = config.ssd_path;
  hal::BlockOpenOptions options;
  options.queue_depth = kSsdQueueDepth;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return fail_errno("kvstore.ssd_path " + path);
    if (config.ssd_bytes == 0) {
      return fail(EINVAL, "kvstore.ssd_path " + path + " does not exist and kvstore.ssd_bytes is not set: "
                                                         "give the size of the file to create");
    }
    options.create = true;
    options.truncate_to = config.ssd_bytes;
  } else if (S_ISREG(st.st_mode)) {
    // Only ever grown: a larger file keeps its size (and its chunks).
    if (static_cast<uint64_t>(st.st_size) < config.ssd_bytes) options.truncate_to = config.ssd_bytes;
  } else if (!S_ISBLK(st.st_mode)) {
    return fail(EINVAL, "kvstore.ssd_path " + path + " is neither a regular file nor a block device");
  }

  KvSsd ssd;
  // Locked before anything is written to it (a new file is created here,
  // empty, and sized by the device open below).
  ssd.lock.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | (options.create ? O_CREAT : 0), 0600));
  if (!ssd.lock) return fail_errno("kvstore.ssd_path " + path);
  if (::flock(ssd.lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return fail(EBUSY, "kvstore.ssd_path " + path + " is in use by another process (another cxlpoold?)");
    }
    return fail_errno("flock " + path);
  }
  auto device = open_with(config.ssd_engine, path, options, ssd.engine);
  if (!device && device.error().code == EINVAL && options.direct) {
    // tmpfs and a few other file systems have no O_DIRECT: the log still
    // works through the page cache, with fdatasync for durability.
    log->warn("kvstore: {}: {}; opening it without O_DIRECT", path, device.error().message);
    options.direct = false;
    ssd.direct = false;
    device = open_with(config.ssd_engine, path, options, ssd.engine);
  }
  if (!device) return tl::unexpected(device.error());

  kvcache::SsdStoreConfig store_config;
  store_config.region_bytes = static_cast<uint32_t>(config.ssd_region_bytes);
  store_config.sync = config.ssd_sync == KvSsdSync::kPerCommit ? kvcache::SsdSyncPolicy::kPerCommit
                                                                : kvcache::SsdSyncPolicy::kPerRegion;
  store_config.index_capacity = config.index_capacity;
  store_config.write_buffers = static_cast<uint32_t>(
      std::clamp<uint64_t>(kSsdWriteBytesInFlight / config.ssd_region_bytes + 1, 2, 16));
  // On a block device ssd_bytes bounds the part of it the log uses.
  if (S_ISBLK(st.st_mode) && config.ssd_bytes != 0) {
    store_config.max_regions = static_cast<uint32_t>(config.ssd_bytes / config.ssd_region_bytes);
  }
  auto store = kvcache::SsdStore::open(std::move(*device), store_config);
  if (!store) return fail(store.error().code, "kvstore.ssd_path " + path + ": " + store.error().message);
  ssd.store = std::move(*store);
  const auto& stats = ssd.store->stats();
  log->info("kvstore: SSD tier {} ({}, {}{}): {} regions of {}, {} chunks recovered, {} damaged regions, "
            "{} corrupt entries dropped",
            path, format_size(ssd.store->device().size()), ssd.engine, ssd.direct ? ", O_DIRECT" : "",
            ssd.store->region_count(), format_size(config.ssd_region_bytes), stats.recovered_entries,
            stats.damaged_regions, stats.corrupt_dropped);
  return ssd;
}

}  // namespace cxlpool::daemon
