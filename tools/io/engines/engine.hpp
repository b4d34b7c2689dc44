// SPDX-License-Identifier: Apache-2.0
// What the runner drives: one engine instance per (job clone, file). Engines
// built on a hal::BlockDevice (psync = posix driver, io_uring, libaio, mmap)
// forward to it; cuda and kvstore adapt their own targets to the same calls.
// Requests and completions are hal's, so a BlockDevice-backed engine adds no
// copying and no allocation per I/O.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/block_device.hpp"
#include "../job/job_spec.hpp"

namespace cxlpool::io {

// CPU time spent outside the job's own thread on its behalf (an io_uring
// SQPOLL kernel thread), so usr/sys per I/O are honest.
struct HelperCpu {
  std::uint64_t user_ns = 0;
  std::uint64_t system_ns = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const char* name() const = 0;

  // Geometry of the target (alignment the runner must respect).
  virtual const hal::BlockGeometry& geometry() const = 0;

  // The runner asks once, before any I/O, for `count` buffers of `bytes`
  // each. Buffer i may then be named by IoRequest::buffer_index = i when the
  // engine registered them (fixedbufs). Owned by the engine.
  virtual Result<std::span<std::byte*>> buffers(std::uint32_t count, std::size_t bytes) = 0;

  // Called on the thread that will run the job, before its first submit
  // (engines whose rings serve one thread bind them here).
  virtual Result<void> start() { return {}; }

  // Queue and submit a batch (iodepth_batch_submit requests). EAGAIN: more
  // than iodepth in flight.
  virtual Result<void> submit(std::span<const hal::IoRequest> requests) = 0;

  // Waits for at least `min` completions (or `timeout`), returns up to out.size().
  virtual Result<std::size_t> reap(std::span<hal::IoCompletion> out, std::size_t min,
                                   std::chrono::nanoseconds timeout) = 0;

  virtual std::uint32_t in_flight() const = 0;

  // CPU used by helper threads since open; nullopt when there are none.
  virtual std::optional<HelperCpu> helper_cpu() const { return std::nullopt; }
};

struct EngineTarget {
  std::string path;       // the file (or "kvstore" socket path for kvstore)
  std::uint64_t size = 0; // bytes the job covers (offset + size); files are created/extended to it
  bool writes = false;    // open read-write (and create)
};

// Opens `job.ioengine` on `target`. Errors name the engine and the reason,
// e.g. "io_uring: hipri needs a device with poll queues (nvme poll_queues=0)",
// "cuda: no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)" with ENODEV so the
// caller can skip rather than fail.
Result<std::unique_ptr<Engine>> open_engine(const JobSpec& job, const EngineTarget& target);

// False for engines whose target is not a local file the runner lays out
// (devpool: the filename names the link, the SSD is the backend's).
bool engine_uses_local_files(std::string_view ioengine);

// Ends what engines keep open across the jobs of a run (devpool's link
// handles and their attachments). The runner calls it when the run ends,
// on the thread that ran it, while the client library can still talk to
// the daemon (not from a static destructor: its per-thread buffers are
// gone by then).
void close_engines_shared_state();

}  // namespace cxlpool::io
