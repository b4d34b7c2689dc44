// SPDX-License-Identifier: Apache-2.0
#include "kv_ssd.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>
#include <vector>

#include "../logging.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/block_workers.hpp"
#include "cxlpool/kvcache/ssd_format.hpp"

namespace cxlpool::daemon {
namespace {

// Reads in flight on the device; the store keeps at most this many.
constexpr uint32_t kSsdQueueDepth = 128;
constexpr uint64_t kSsdStagingBytes = 64ull << 20;  // read staging on a file, by default
// Region bytes the log keeps in flight while the next region fills: what
// fio keeps in flight at bs=2M iodepth=32, which saturates the disks here.
constexpr uint64_t kSsdWriteBytesInFlight = 64ull << 20;

// kvstore.ssd_engine's words for the engines (also what status and the log
// call them) and the registry's names for the same backends.
const char* backend_for(KvSsdEngine engine) {
  switch (engine) {
    case KvSsdEngine::kIoUring: return "uring";
    case KvSsdEngine::kPosix: return "posix";
    case KvSsdEngine::kAuto: break;
  }
  return "auto";
}

std::string engine_label(std::string_view backend) {
  return backend == "uring" ? "io_uring" : std::string(backend);
}

// Says once per engine why it was passed over, and once why O_DIRECT was
// dropped (the registry tries every engine again buffered, so the same
// engine may be skipped twice). An engine this build lacks is no news
// (`cxlpoolctl backends` shows it): only worth a debug line.
void log_skips(const hal::BackendSkips& skipped, const std::string& path, const std::string& used) {
  auto log = logger("kvstore");
  std::vector<std::string> said;
  for (const auto& skip : skipped) {
    const std::string key = skip.name + '\n' + skip.reason;
    if (std::find(said.begin(), said.end(), key) != said.end()) continue;
    said.push_back(key);
    if (skip.name == hal::kDirectIoSkip) {
      log->warn("{}: {}; opening it without O_DIRECT", path, skip.reason);
    } else {
      log->log(skip.state == hal::BackendState::kNotCompiled ? spdlog::level::debug : spdlog::level::warn,
               "{} skipped ({}); using the {} engine for {}", engine_label(skip.name), skip.reason, used, path);
    }
  }
}

std::string mode_text(mode_t mode) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0%o", static_cast<unsigned>(mode));
  return buffer;
}

// 'blank': never written (all zeros); 'ours': a region header of the log;
// anything else is some other file's data.
enum class HeaderKind { kBlank, kOurs, kForeign };

HeaderKind classify_region_head(std::span<const std::byte> block) {
  if (std::all_of(block.begin(), block.end(), [](std::byte b) { return b == std::byte{0}; })) {
    return HeaderKind::kBlank;
  }
  return kvcache::decode_region_header(block) ? HeaderKind::kOurs : HeaderKind::kForeign;
}

// The region heads within the first `size` bytes that hold something other
// than the log; empty when none does, or when any region starts with one of
// the log's headers: one good header is enough to call the file ours, so
// that a log with a region torn by a crash is still taken back.
Result<std::vector<uint64_t>> foreign_region_heads(int fd, uint64_t size, uint64_t region_bytes,
                                                   const std::string& path) {
  std::array<std::byte, kvcache::kSsdBlockBytes> block{};
  std::vector<uint64_t> foreign;
  for (uint64_t offset = 0; offset < size; offset += region_bytes) {
    block.fill(std::byte{0});
    const ssize_t got = ::pread(fd, block.data(), block.size(), static_cast<off_t>(offset));
    if (got < 0) return fail_errno("kvstore.ssd_path " + path + ": reading offset " + std::to_string(offset));
    switch (classify_region_head(block)) {
      case HeaderKind::kOurs: return std::vector<uint64_t>{};
      case HeaderKind::kForeign: foreign.push_back(offset); break;
      case HeaderKind::kBlank: break;
    }
  }
  return foreign;
}

struct LogFile {
  UniqueFd fd;
  bool block_device = false;
};

// Opens ssd_path without following a symbolic link (the daemon is root: a
// link planted by a user must not aim its writes at a system file), checks
// what it is and what it holds, and gives a regular file its full size in
// allocated blocks, so that a full file system fails here rather than in
// the region writes later.
Result<LogFile> open_log_file(const KvStoreSection& config) {
  const std::string& path = config.ssd_path;
  const std::string what = "kvstore.ssd_path " + path;
  constexpr int kFlags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY;
  // Looked at before it is opened: opening a device node can itself act
  // on the device (a tape rewinds), and a link is refused, not followed.
  struct stat before {};
  const bool exists = ::lstat(path.c_str(), &before) == 0;
  if (!exists && errno != ENOENT) return fail_errno(what);
  if (exists && S_ISLNK(before.st_mode)) {
    return fail(ELOOP, what + " is a symbolic link; give the path of the file itself");
  }
  if (exists && !S_ISREG(before.st_mode) && !S_ISBLK(before.st_mode)) {
    return fail(EINVAL, what + " is neither a regular file nor a block device (mode " + mode_text(before.st_mode) +
                            ")");
  }
  LogFile out;
  bool created = false;
  if (exists) {
    out.fd.reset(::open(path.c_str(), kFlags));
  } else {
    if (config.ssd_bytes == 0) {
      return fail(EINVAL, what + " does not exist and kvstore.ssd_bytes is not set: give the size of the file to create");
    }
    out.fd.reset(::open(path.c_str(), kFlags | O_CREAT | O_EXCL, 0600));
    if (!out.fd && errno == ENOENT) {
      return fail(ENOENT, what + ": its directory " + std::filesystem::path(path).parent_path().string() +
                              " does not exist");
    }
    created = static_cast<bool>(out.fd);
  }
  if (!out.fd) {
    if (errno == ELOOP) return fail(ELOOP, what + " is a symbolic link; give the path of the file itself");
    return fail_errno(what);
  }
  // Whatever goes wrong from here leaves no new file behind.
  struct RemoveOnError {
    const std::string& path;
    bool armed;
    ~RemoveOnError() {
      if (armed) ::unlink(path.c_str());
    }
  } cleanup{path, created};

  struct stat st {};
  if (::fstat(out.fd.get(), &st) != 0) return fail_errno("fstat " + path);
  out.block_device = S_ISBLK(st.st_mode);
  // The path may have changed between the look and the open.
  if ((!S_ISREG(st.st_mode) && !out.block_device) ||
      (exists && (st.st_dev != before.st_dev || st.st_ino != before.st_ino))) {
    return fail(EINVAL, what + " changed while it was being opened, or is neither a regular file nor a block device");
  }
  // Locked before anything is read or written.
  if (::flock(out.fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return fail(EBUSY, what + " is in use by another process (another cxlpoold?)");
    }
    return fail_errno("flock " + path);
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (out.block_device) {
    if (::ioctl(out.fd.get(), BLKGETSIZE64, &size) != 0) return fail_errno("BLKGETSIZE64 " + path);
    if (config.ssd_bytes != 0) size = std::min(size, config.ssd_bytes);
  }
  if (!created) {
    auto foreign = foreign_region_heads(out.fd.get(), size, config.ssd_region_bytes, path);
    if (!foreign) return tl::unexpected(foreign.error());
    if (!foreign->empty() && !config.ssd_format_foreign) {
      return fail(EEXIST, what + " holds data that is not a cxlpool KV log; refusing to overwrite it (set "
                                 "kvstore.ssd_format_foreign = true to give it to the log)");
    }
    // Formatting it: region heads of zeros are free regions of an empty
    // log, and once one is written the file is recognised as the log's.
    const std::array<std::byte, kvcache::kSsdBlockBytes> zeros{};
    for (const uint64_t offset : *foreign) {
      if (::pwrite(out.fd.get(), zeros.data(), zeros.size(), static_cast<off_t>(offset)) !=
          static_cast<ssize_t>(zeros.size())) {
        return fail_errno(what + ": clearing the region at " + std::to_string(offset));
      }
    }
    if (!foreign->empty()) {
      logger("kvstore")->warn("{} held other data; ssd_format_foreign: {} region head(s) cleared for the log",
                              path, foreign->size());
    }
  }
  if (!out.block_device) {
    // Only ever grown: a larger file keeps its size (and its chunks).
    const uint64_t want = std::max(size, config.ssd_bytes);
    if (const int rc = ::posix_fallocate(out.fd.get(), 0, static_cast<off_t>(want)); rc != 0) {
      return fail(rc, "cannot allocate " + format_size(want) + " for " + what + ": " + std::strerror(rc));
    }
  }
  cleanup.armed = false;
  return out;
}

// ssd_workers threads, each with a queue of its own on the file: the one
// the registry chose, and more of the same engine opened the same way.
Result<std::unique_ptr<hal::BlockDevice>> open_ssd_workers(std::unique_ptr<hal::BlockDevice> first,
                                                           const std::string& reopen, hal::BlockOpenOptions options,
                                                           uint32_t workers) {
  options.direct = first->direct();
  options.buffered_fallback = false;
  const std::string backend = first->backend_name();
  std::vector<std::unique_ptr<hal::BlockDevice>> queues;
  queues.push_back(std::move(first));
  while (queues.size() < workers) {
    auto queue = hal::open_block_device(backend, reopen, options);
    if (!queue) return tl::unexpected(queue.error());
    queues.push_back(std::move(*queue));
  }
  // Each read's CRC32C is taken by the worker that reaped it: the checks
  // spread over the workers instead of queueing on the event loop.
  return hal::make_worker_block_device(std::move(queues), &kvcache::ssd_read_digest);
}

}  // namespace

Result<KvSsd> open_kv_ssd(const KvStoreSection& config) {
  auto log = logger("kvstore");
  const std::string& path = config.ssd_path;
  hal::BlockOpenOptions options;
  options.queue_depth = kSsdQueueDepth;
  // tmpfs and a few other file systems have no O_DIRECT: the log still
  // works through the page cache, with fdatasync for durability.
  options.buffered_fallback = true;

  KvSsd ssd;
  auto opened = open_log_file(config);
  if (!opened) return tl::unexpected(opened.error());
  ssd.lock = std::move(opened->fd);
  const bool block_device = opened->block_device;
  // The engines open the file again by name: through this descriptor's
  // /proc entry they get the very file checked above, whatever happens to
  // the path meanwhile.
  const std::string reopen = "/proc/self/fd/" + std::to_string(ssd.lock.get());
  hal::BackendSkips skipped;
  auto device = hal::open_block_device(backend_for(config.ssd_engine), reopen, options, &skipped);
  if (device) {
    ssd.engine = engine_label((*device)->backend_name());
    ssd.direct = (*device)->direct();
    log_skips(skipped, path, ssd.engine);
  }
  if (!device) return fail(device.error().code, "kvstore.ssd_path " + path + ": " + device.error().message);
  if (config.ssd_workers > 0) {
    auto spread = open_ssd_workers(std::move(*device), reopen, options, config.ssd_workers);
    if (!spread) return fail(spread.error().code, "kvstore.ssd_path " + path + ": " + spread.error().message);
    device = std::move(spread);
  }

  kvcache::SsdStoreConfig store_config;
  store_config.region_bytes = static_cast<uint32_t>(config.ssd_region_bytes);
  store_config.sync = config.ssd_sync == KvSsdSync::kPerCommit ? kvcache::SsdSyncPolicy::kPerCommit
                                                                : kvcache::SsdSyncPolicy::kPerRegion;
  store_config.index_capacity = config.index_capacity;
  store_config.write_buffers = static_cast<uint32_t>(
      std::clamp<uint64_t>(kSsdWriteBytesInFlight / config.ssd_region_bytes + 1, 2, 16));
  // On a file, O_DIRECT reads into unregistered memory (the views' slots)
  // may run about one at a time (docs/perf.md): reads go through registered
  // staging buffers, as many slot-sized ones as fit in 64 MiB (at most 32).
  // A block device needs none.
  store_config.read_staging = config.ssd_read_staging.value_or(
      block_device ? 0 : static_cast<uint32_t>(std::clamp<uint64_t>(kSsdStagingBytes / config.slot_bytes, 1, 32)));
  store_config.staging_bytes = static_cast<uint32_t>(config.slot_bytes);
  // On a block device ssd_bytes bounds the part of it the log uses.
  if (block_device && config.ssd_bytes != 0) {
    store_config.max_regions = static_cast<uint32_t>(config.ssd_bytes / config.ssd_region_bytes);
  }
  auto store = kvcache::SsdStore::open(std::move(*device), store_config);
  if (!store) return fail(store.error().code, "kvstore.ssd_path " + path + ": " + store.error().message);
  ssd.store = std::move(*store);
  const auto& stats = ssd.store->stats();
  log->info("SSD tier {} ({}, {}{}, {} I/O worker(s)): {} regions of {}, {} chunks recovered, {} damaged regions, "
            "{} corrupt entries dropped",
            path, format_size(ssd.store->device().size()), ssd.engine, ssd.direct ? ", O_DIRECT" : "",
            config.ssd_workers, ssd.store->region_count(), format_size(config.ssd_region_bytes),
            stats.recovered_entries,
            stats.damaged_regions, stats.corrupt_dropped);
  return ssd;
}

}  // namespace cxlpool::daemon
