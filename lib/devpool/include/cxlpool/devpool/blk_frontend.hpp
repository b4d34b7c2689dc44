// SPDX-License-Identifier: Apache-2.0
// The storage engine's frontend: submits block commands over a link and
// collects their completions. It runs inside the application (libcxlpool's
// cxlpool_blk_* calls, cxlpool-io's devpool engine): no thread of its own,
// the caller's submit and poll drive it.
//
// Data buffers are carved out of the link's frontend buffer area
// (alloc_buffer): the backend DMAs reads into them and writes out of them,
// so a buffer must stay untouched while a command that names it is in
// flight.
//
// A backend that dies never answers: when commands are outstanding and no
// completion arrives for `command_timeout`, or the optional liveness probe
// says the backend is gone, every outstanding command completes with
// -ETIMEDOUT (resp. -ENOTCONN) and the frontend refuses further commands
// with ENOTCONN. Completions are never invented: a command completes with
// success only when the backend said so.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/blk_records.hpp"
#include "cxlpool/devpool/link.hpp"

namespace cxlpool::devpool::blk {

struct BlkFrontendOptions {
  std::chrono::milliseconds command_timeout{10000};
  // Asked while commands are outstanding and nothing completes (at most
  // every probe_interval); false means the backend is gone.
  std::function<bool()> backend_alive;
  std::chrono::milliseconds probe_interval{50};
  // Between completions: poll this long, then (doorbell) sleep on the
  // completion channel until the backend rings, in waits of at most
  // doorbell_wait, or (no doorbell) yield the CPU, then nap. The doorbell
  // works only where both sides share one host's memory (a coherent link);
  // with a backend that does not ring it costs at most one wait.
  std::chrono::nanoseconds spin = std::chrono::microseconds(2);
  bool doorbell = false;
  std::chrono::nanoseconds doorbell_wait = std::chrono::microseconds(500);
};

struct BlkRequest {
  Opcode opcode = Opcode::kRead;
  std::uint8_t flags = 0;              // kFlagFua for writes
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  std::uint64_t buffer_offset = 0;     // in buffer_area()
  std::uint64_t user_data = 0;
};

struct BlkResult {
  std::uint64_t user_data = 0;
  std::int32_t status = 0;             // 0 or -errno
  std::uint32_t bytes = 0;
};

class BlkFrontend {
 public:
  virtual ~BlkFrontend() = default;

  const DeviceInfo& device() const { return device_; }
  std::span<std::byte> buffer_area() const { return area_; }

  // Page-aligned buffers in the frontend area. ENOMEM when no free run is
  // long enough, EINVAL for 0 bytes. free_buffer: EINVAL for an offset that
  // is not the start of a live allocation.
  Result<std::uint64_t> alloc_buffer(std::uint64_t bytes);
  Result<void> free_buffer(std::uint64_t offset);

  // Queues as many requests as fit and returns how many (≥ 1), or: EAGAIN
  // none fits (poll first), EINVAL/ERANGE/EFAULT/EROFS the first request is
  // malformed (the checks the backend applies, done here first; nothing
  // queued), ENOTCONN the backend is gone.
  virtual Result<std::size_t> submit(std::span<const BlkRequest> requests) = 0;

  // Waits until `min` results are ready (or `timeout`), returns up to
  // out.size(). EPROTO: the backend broke the protocol (a corrupt record, an
  // unknown command id); ENOTCONN: the backend is gone and every
  // outstanding command has been reported.
  virtual Result<std::size_t> poll(std::span<BlkResult> out, std::size_t min, std::chrono::nanoseconds timeout) = 0;

  virtual std::uint32_t in_flight() const = 0;
  virtual std::uint32_t max_in_flight() const = 0;
  // 0, or why this frontend gave up on its backend (ENOTCONN, ETIMEDOUT,
  // EPROTO): the commands it failed with that error never got an answer.
  virtual int gone() const = 0;

 protected:
  BlkFrontend() = default;
  void init_buffers(std::span<std::byte> area);

  DeviceInfo device_;
  std::span<std::byte> area_;

 private:
  std::vector<std::uint32_t> run_pages_;  // pages of the run starting at page i (0 when not a run start)
  std::vector<bool> page_used_;
};

// Attaches to the link's channels and identifies the device (a kIdentify
// command, answered within options.command_timeout). ETIMEDOUT/ENOTCONN
// when no backend answers, EPROTO for channels not formatted for blk
// records or an identify that does not decode.
Result<std::unique_ptr<BlkFrontend>> make_blk_frontend(const LinkView& link, const BlkFrontendOptions& options = {});

}  // namespace cxlpool::devpool::blk
