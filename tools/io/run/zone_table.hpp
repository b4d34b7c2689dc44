// SPDX-License-Identifier: Apache-2.0
// zonemode=zbd on an emulated zoned target: a regular file or a
// conventional block device cut into zones of zonesize bytes from offset 0,
// each with a write pointer, as fio emulates zones where the device has
// none. Writes land at the write pointer of the zone the job picked (so
// every zone is written sequentially even by random writers), a full zone
// is reset (write pointer back to its start, nothing erased) before it is
// written again, and at most max_open_zones zones (written, not yet full)
// take writes at a time: a write to another zone goes to one of them
// instead. Reads stay below write pointers unless read_beyond_wp=1. One
// table per file, shared by every job of the run on that file (jobs run
// on threads), so a read job sees what an earlier write job wrote.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "rng.hpp"

namespace cxlpool::io {

class ZoneTable {
 public:
  // Zones of `zone_size` bytes over `file_bytes` (a last partial zone is
  // left out); each takes writes up to `capacity` bytes from its start.
  // Zones wholly inside the first `written_bytes` start full (the file
  // already holds that data), the others empty.
  ZoneTable(std::uint64_t file_bytes, std::uint64_t zone_size, std::uint64_t capacity,
            std::uint64_t written_bytes, std::uint32_t max_open);

  struct Io {
    std::uint64_t offset = 0;
    std::uint32_t bytes = 0;
  };
  // Where a write the job picked at `offset` goes, of at most `bytes` and a
  // multiple of `unit` (shortened at the zone's capacity); zones outside
  // [first, end) of the job's region are never chosen.
  Io place_write(std::uint64_t offset, std::uint32_t bytes, std::uint32_t unit, std::uint64_t first,
                 std::uint64_t end, Rng& rng);
  // Where a read the job picked at `offset` goes: there when below the
  // zone's write pointer (shortened to it), else in the next zone of the
  // region holding data (at its start when `sequential`, at the same
  // distance into it modulo its data otherwise). nullopt: no zone of the
  // region holds data.
  std::optional<Io> place_read(std::uint64_t offset, std::uint32_t bytes, std::uint32_t unit, std::uint64_t first,
                               std::uint64_t end, bool sequential);
  // Resets every zone of [first, end) (a write job with verify starts from
  // empty zones, as fio does).
  void reset_range(std::uint64_t first, std::uint64_t end);

  std::uint64_t zone_size() const { return zone_size_; }
  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t zones() const { return wp_.size(); }
  std::uint64_t write_pointer(std::uint64_t zone) const;
  std::uint64_t resets() const;
  std::uint32_t open_zones() const;

 private:
  std::uint64_t start(std::uint64_t z) const { return z * zone_size_; }
  bool full(std::uint64_t z, std::uint32_t unit) const { return wp_[z] + unit > start(z) + capacity_; }
  void close(std::uint64_t z);
  void reset(std::uint64_t z);

  mutable std::mutex mutex_;
  std::uint64_t zone_size_;
  std::uint64_t capacity_;
  std::uint32_t max_open_;
  std::vector<std::uint64_t> wp_;  // absolute write pointer per zone
  std::vector<std::uint64_t> open_;
  std::uint64_t resets_ = 0;
};

// The run's table for the file at `path` (by device and inode), made on
// first use from the job's zone options, the file's size and how much of
// it holds data; a later job with other zone sizes on the same file is
// refused.
Result<std::shared_ptr<ZoneTable>> shared_zone_table(const std::string& path, std::uint64_t file_bytes,
                                                     std::uint64_t written_bytes, std::uint64_t zone_size,
                                                     std::uint64_t capacity, std::uint32_t max_open);

// Whether `path` is a zoned block device (host-managed or host-aware per
// sysfs queue/zoned); those need zone reports and resets cxlpool-io does
// not issue.
bool is_zoned_block_device(const std::string& path);

}  // namespace cxlpool::io
