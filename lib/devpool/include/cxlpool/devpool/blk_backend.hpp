// SPDX-License-Identifier: Apache-2.0
// The storage engine's backend: serves one link's block commands on a
// hal::BlockDevice (io_uring with O_DIRECT on the SSD in production).
//
// Reads go straight from the device into the frontend's buffer area and
// writes straight out of it: the area is in the shared region, so the
// device's DMA is the only copy. Every command is decoded and checked
// (blk_records.hpp) before anything touches the device or the area; a
// command that fails a check is answered with its negative errno and the
// link stays up. Many commands are kept in flight on the device (the
// queue depth); completions are posted in batches, a flush per round.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/blk_records.hpp"
#include "cxlpool/devpool/link.hpp"
#include "cxlpool/hal/block_device.hpp"

namespace cxlpool::devpool::blk {

struct BlkBackendOptions {
  // Commands in flight on the device at most (capped at the device's own
  // queue depth).
  std::uint32_t queue_depth = 64;
  // Idle strategy: busy-poll this long after the last work, then sleep,
  // doubling the sleep up to max_sleep.
  std::chrono::nanoseconds spin = std::chrono::microseconds(50);
  std::chrono::nanoseconds max_sleep = std::chrono::microseconds(500);
  // Register the frontend area with the device (io_uring fixed buffers);
  // where the device refuses (RLIMIT_MEMLOCK), plain buffers are used.
  bool register_buffers = true;
  bool read_only = false;
  // Wake a frontend sleeping on the completion channel (a futex on the
  // slot's sequence word, blk_doorbell.hpp) after each batch: one host only
  // (a coherent link); costs one syscall per batch.
  bool doorbell = false;
};

struct BlkBackendStats {
  std::uint64_t commands = 0;        // decoded from the request channel
  std::uint64_t reads = 0, writes = 0, flushes = 0, identifies = 0;
  std::uint64_t rejected = 0;        // answered with an error before reaching the device
  std::uint64_t device_errors = 0;   // completed by the device with an error
  std::uint64_t bytes_read = 0, bytes_written = 0;
  std::uint64_t completion_batches = 0;  // flushes of the completion channel that published records
  bool buffers_registered = false;
};

// Adds `s`'s counters to `total` (a program serving several links).
void add_stats(BlkBackendStats& total, const BlkBackendStats& s);

class BlkBackend {
 public:
  virtual ~BlkBackend() = default;

  // One round: collects device completions (waiting up to `device_wait`
  // for the first when commands are on the device), posts completions,
  // takes new commands while the device has room. Returns whether anything
  // moved.
  // An error is fatal to the link: EPROTO when the request channel is
  // corrupt, the device's error when it fails outside a command.
  virtual Result<bool> step(std::chrono::nanoseconds device_wait = std::chrono::nanoseconds(0)) = 0;

  // Steps until `stop` is set, idling as the options say. `leave`, when
  // given, is asked whenever the loop is about to nap with nothing in
  // flight; true ends run() too (the caller's chance to hand the link to
  // the next frontend). Returns the first fatal error of step().
  Result<void> run(const std::atomic<bool>& stop, const std::function<bool()>& leave = {});

  virtual const DeviceInfo& device_info() const = 0;
  virtual const BlkBackendStats& stats() const = 0;
  virtual std::uint32_t in_flight() const = 0;

 protected:
  explicit BlkBackend(const BlkBackendOptions& options) : options_(options) {}
  BlkBackendOptions options_;
};

// What the backend announces for `device`: block size and buffer
// alignment are the device's direct-I/O ones, the capacity is rounded down
// to a whole block.
DeviceInfo device_info_of(const hal::BlockDevice& device, const BlkBackendOptions& options);

// Attaches to the link's channels (consumer of requests, producer of
// completions, with the line access its coherence asks for). The link and
// the device must outlive the backend. EPROTO for channels that are not
// formatted for blk records (56-byte requests, 16-byte completions).
Result<std::unique_ptr<BlkBackend>> make_blk_backend(const LinkView& link, hal::BlockDevice& device,
                                                     const BlkBackendOptions& options = {});

}  // namespace cxlpool::devpool::blk
