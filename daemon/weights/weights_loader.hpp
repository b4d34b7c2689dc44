// SPDX-License-Identifier: Apache-2.0
// A model's files as the daemon gets them: descriptors the client opened
// with its own rights and passed in SCM_RIGHTS. The daemon never opens a
// path a client names (it runs as root): holding a descriptor open for
// reading is the proof that the client may read the file. The paths in the
// request are labels for messages and `weights list` only.
//
// check_client_files runs on the event loop and only asks the kernel about
// the descriptors (statx without syncing, fcntl), so it cannot block on a
// slow file system; reading and parsing the headers (read_model_files) and
// copying the tensors run on the weights worker thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/weights/region_layout.hpp"

namespace cxlpool::daemon {

// A file's identity: the same (device, inode) is the same file whatever the
// path, link or descriptor it was reached through.
struct FileIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
  auto operator<=>(const FileIdentity&) const = default;
};

struct ClientFiles {
  std::vector<std::string> paths;  // the client's labels, one per file
  std::vector<UniqueFd> fds;
  std::vector<FileIdentity> ids;
  // The intersection of the files' read bits (0444 at most): the mode of a
  // region made from them, so it is never easier to open than the files.
  uint32_t read_mode = 0444;
};

// Checks one WeightsLoad's descriptors: exactly one per path (EINVAL
// otherwise, naming both counts), each open for reading (EBADF for O_PATH
// or write-only descriptors: they prove no right to read), a regular file
// (EINVAL), and no file twice under any spelling or link (EINVAL naming
// both labels).
Result<ClientFiles> check_client_files(std::vector<std::string> paths, std::vector<UniqueFd> fds);

// What one load may make the daemon read and hold, across all its files
// (ParseLimits bounds each file): the parsed headers stay in memory until
// the load ends, and up to kMaxLoadsUnderWay loads run at once.
inline constexpr uint64_t kMaxLoadHeaderBytes = 256ull << 20;
inline constexpr size_t kMaxLoadTensors = 1u << 21;

struct OpenedModelFiles {
  std::vector<UniqueFd> fds;
  std::vector<weights::LoadedFile> files;
};

// Reads and validates every file's header (worker thread). EBADMSG when a
// file is not a valid safetensors file or the files together pass
// kMaxLoadHeaderBytes or kMaxLoadTensors (the message starts with its
// label), EIO-class errors of the reads; ECANCELED once *cancel is set.
Result<OpenedModelFiles> read_model_files(ClientFiles files, const weights::ParseLimits& limits,
                                          const std::atomic<bool>* cancel = nullptr);

// Copies every resident tensor into `region` at its planned offset. Runs on
// the weights service's worker thread: ECANCELED once *cancel is set
// (checked every few MiB, so a stopping daemon does not wait for a whole
// model).
Result<void> copy_resident_tensors(const OpenedModelFiles& opened, const weights::RegionPlan& plan,
                                   std::span<std::byte> region, const std::atomic<bool>* cancel = nullptr);

}  // namespace cxlpool::daemon
