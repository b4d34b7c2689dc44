// SPDX-License-Identifier: Apache-2.0
// The pod region: created (or taken over) by the daemon, locked so that a
// second daemon cannot share it, sized, mapped and formatted. It is opened
// through lib/hal's SharedMemory class, so the same daemon runs a pod in a
// file on tmpfs or hugetlbfs (one host's memory) or on a device-DAX device
// (CXL memory other hosts map too). Engines get its descriptor with
// SCM_RIGHTS and map it themselves.
#pragma once

#include <filesystem>
#include <span>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/devpool/pod_region.hpp"
#include "cxlpool/hal/shared_memory.hpp"

namespace cxlpool::daemon {

class PodFile {
 public:
  // Opens `path` (O_NOFOLLOW): a regular file, created mode 0600 when
  // missing, or a device-DAX character device. Takes an exclusive lock,
  // gives a file the layout's size (sparse: a slot costs memory only once a
  // link is formatted in it), maps it and writes the header and empty
  // tables. EBUSY when another daemon holds it; EINVAL when the memory is
  // not known to be coherent and the geometry asks for the coherent channel
  // mode (its users could read stale lines), or for anything but a regular
  // file or a /dev/dax device.
  static Result<PodFile> create(const std::filesystem::path& path, const devpool::PodGeometry& geometry);

  int fd() const { return memory_.fd(); }
  std::span<std::byte> memory() const { return memory_.bytes().first(bytes_); }
  const devpool::PodGeometry& geometry() const { return geometry_; }
  const std::filesystem::path& path() const { return path_; }
  // "file tmpfs /run/cxlpool/devpool.pod (140 MiB, coherent)", for the log.
  std::string describe() const { return memory_.describe(); }
  // Why this memory is a poor place for a pod (a disk-backed file system
  // whose page cache writes channel traffic back to the disk); "" when fine.
  std::string placement_warning() const;
  // Removes the file's name at a clean stop, while the lock is still held
  // (so that a daemon starting meanwhile never loses a file it just took):
  // its formatted slots would otherwise stay in tmpfs until the next start.
  // Engines that still map it keep their mappings. A device is left alone.
  void remove_name() const;

 private:
  PodFile(std::filesystem::path path, UniqueFd lock, hal::SharedMemory memory, devpool::PodGeometry geometry,
          uint64_t bytes)
      : path_(std::move(path)), lock_(std::move(lock)), memory_(std::move(memory)), geometry_(geometry), bytes_(bytes) {}

  std::filesystem::path path_;
  UniqueFd lock_;  // holds the exclusive flock for the daemon's lifetime
  hal::SharedMemory memory_;
  devpool::PodGeometry geometry_;
  uint64_t bytes_ = 0;  // the layout's size (the mapping may be rounded up)
};

}  // namespace cxlpool::daemon
