// SPDX-License-Identifier: Apache-2.0
// Client side of access reports: buffers object accesses and publishes them
// in batches to the connection's shared-memory ring (opened on first use).
//
// Threads: one mutex per client serializes reporters, which also makes this
// the ring's single producer. The common path is a lock, a compare with the
// previous report (identical back-to-back reports merge into one entry's
// count) and a store into the batch; every kBatch entries the batch is
// copied into the ring with one release store. Nothing here makes a syscall
// except opening the ring.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "cxlpool/client/connection.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/proto/access_ring.hpp"

namespace cxlpool::client {

class AccessReporter {
 public:
  static constexpr size_t kBatch = 64;
  // Longer accesses are split into entries of at most this many bytes.
  static constexpr uint64_t kMaxEntryBytes = uint64_t{1} << 31;

  explicit AccessReporter(std::shared_ptr<Connection> conn) : conn_(std::move(conn)) {}

  // Opens the ring now with `entries` slots (0: the daemon's default).
  // EALREADY: open already; otherwise the daemon's or mmap's error.
  Result<void> open(uint32_t entries);

  // Records one access (validated by the caller). Returns how many entries
  // a batch publish triggered by this call had to drop (ring full), or the
  // error of opening the ring (remembered: later reports fail the same way
  // without retrying until open() succeeds).
  Result<uint64_t> report(uint64_t region_id, uint64_t offset, uint64_t length, uint32_t flags);

  // Publishes the batch; returns the entries dropped because the ring was full.
  Result<uint64_t> flush();

 private:
  Result<void> open_locked(uint32_t entries);
  Result<uint64_t> publish_locked();

  std::shared_ptr<Connection> conn_;
  std::mutex mutex_;
  bool open_ = false;
  std::optional<Error> open_error_;
  proto::AccessRingMemory memory_;
  proto::AccessRingProducer producer_;
  std::array<proto::AccessRingEntry, kBatch> batch_{};
  size_t batched_ = 0;
};

}  // namespace cxlpool::client
