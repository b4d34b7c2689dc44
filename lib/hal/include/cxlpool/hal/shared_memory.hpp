// SPDX-License-Identifier: Apache-2.0
// SharedMemory: the memory a device link lives in, mapped MAP_SHARED by
// every side of the link (the pod daemon, backend and frontend engines,
// storage clients). Three backends provide it (docs/devpool.md, "Shared
// memory"):
//   file    a file on tmpfs (/dev/shm), hugetlbfs or another file system,
//           created or opened by path; one host
//   memfd   a sealed memfd created here, or received from a peer with
//           SCM_RIGHTS and checked before it is mapped; one host
//   devdax  a device-DAX character device (/dev/daxX.Y): CXL memory that
//           several hosts may map
// The mapping says whether its users are known to see each other's stores
// (coherent) so a channel's coherence mode can default from it. It cannot
// prove coherence: a devdax device is assumed shared by hosts without a
// coherent fabric, and so non-coherent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::hal {

// What to open. The backends read the fields that concern them; "auto"
// picks the backend from the spec (hal::open_shared_memory).
struct SharedMemorySpec {
  // file: the file to create or open. devdax: the device ("/dev/dax0.0").
  // memfd: must be empty.
  std::string path;
  // Bytes wanted. 0: all of an existing file, device or received memfd.
  // Rounded up to the backend's alignment (huge page, devdax align).
  std::uint64_t size = 0;
  // file: create the file when it does not exist (mode 0600), sizing it.
  bool create = true;
  // memfd: a memfd received from a peer to map instead of creating one.
  // Borrowed: the mapping keeps a duplicate.
  int fd = -1;
  // memfd: the name /proc/PID/fd shows ("memfd:<name>").
  std::string name = "cxlpool-shm";
};

struct SharedMemoryInfo {
  std::string backend;     // "file", "memfd", "devdax"
  std::string filesystem;  // "tmpfs", "hugetlbfs", "memfd", "devdax", or another file system's name
  std::string path;        // the file or device; empty for a memfd
  std::uint64_t alignment = 0;  // of the start and the size: page, huge page or devdax alignment
  bool created = false;         // this open created it (file, memfd)
  // Whether every user of this memory sees the others' stores without
  // cache maintenance: true for file and memfd (one host's page cache);
  // false for devdax (assumed CXL memory shared by hosts that do not keep
  // each other's caches coherent) and for a sysfs file (a PCI BAR such as
  // ivshmem's, shared with another kernel).
  bool coherent = true;
  std::string coherence_reason;  // one line: why `coherent` says what it says
};

// An open, mapped shared memory: unmaps and closes on destruction.
class SharedMemory {
 public:
  SharedMemory(UniqueFd fd, Mapping mapping, SharedMemoryInfo info)
      : fd_(std::move(fd)), mapping_(std::move(mapping)), info_(std::move(info)) {}

  std::span<std::byte> bytes() const { return {mapping_.data(), mapping_.length()}; }
  std::uint64_t size() const { return mapping_.length(); }
  // The descriptor behind the mapping: a memfd's is what a peer receives
  // with SCM_RIGHTS.
  int fd() const { return fd_.get(); }
  const SharedMemoryInfo& info() const { return info_; }
  // "file tmpfs /dev/shm/pod (64 MiB, coherent)", for logs and tools.
  std::string describe() const;

 private:
  UniqueFd fd_;
  Mapping mapping_;
  SharedMemoryInfo info_;
};

}  // namespace cxlpool::hal
