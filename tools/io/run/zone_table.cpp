// SPDX-License-Identifier: Apache-2.0
#include "zone_table.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <utility>

namespace cxlpool::io {
namespace {

// A table is a word per zone: bound it so a tiny zonesize on a large device
// is an error, not gigabytes of write pointers.
constexpr std::uint64_t kMaxZones = std::uint64_t{1} << 24;

}  // namespace

ZoneTable::ZoneTable(std::uint64_t file_bytes, std::uint64_t zone_size, std::uint64_t capacity,
                     std::uint64_t written_bytes, std::uint32_t max_open)
    : zone_size_(zone_size), capacity_(std::min(capacity, zone_size)), max_open_(max_open) {
  const std::uint64_t n = zone_size == 0 ? 0 : file_bytes / zone_size;
  wp_.resize(n);
  for (std::uint64_t z = 0; z < n; ++z)
    wp_[z] = start(z) + (start(z) + zone_size_ <= written_bytes ? capacity_ : 0);
}

std::uint64_t ZoneTable::write_pointer(std::uint64_t zone) const {
  std::lock_guard lock(mutex_);
  return wp_.at(zone);
}

std::uint64_t ZoneTable::resets() const {
  std::lock_guard lock(mutex_);
  return resets_;
}

std::uint32_t ZoneTable::open_zones() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::uint32_t>(open_.size());
}

void ZoneTable::close(std::uint64_t z) {
  open_.erase(std::remove(open_.begin(), open_.end(), z), open_.end());
}

void ZoneTable::reset(std::uint64_t z) {
  wp_[z] = start(z);
  close(z);
  ++resets_;
}

void ZoneTable::reset_range(std::uint64_t first, std::uint64_t end) {
  std::lock_guard lock(mutex_);
  for (std::uint64_t z = first; z < end && z < wp_.size(); ++z) {
    if (wp_[z] != start(z)) reset(z);
  }
}

ZoneTable::Io ZoneTable::place_write(std::uint64_t offset, std::uint32_t bytes, std::uint32_t unit,
                                     std::uint64_t first, std::uint64_t end, Rng& rng) {
  std::lock_guard lock(mutex_);
  std::uint64_t z = std::clamp(offset / zone_size_, first, end - 1);
  const bool is_open = std::find(open_.begin(), open_.end(), z) != open_.end();
  if (!is_open && max_open_ != 0 && open_.size() >= max_open_) {
    // The limit is reached: one of the open zones of this region takes it.
    std::vector<std::uint64_t> mine;
    for (std::uint64_t o : open_) {
      if (o >= first && o < end) mine.push_back(o);
    }
    if (!mine.empty()) z = mine[rng.below(mine.size())];
  }
  if (full(z, unit)) reset(z);
  if (std::find(open_.begin(), open_.end(), z) == open_.end()) open_.push_back(z);
  const std::uint64_t room = start(z) + capacity_ - wp_[z];
  Io io{wp_[z], static_cast<std::uint32_t>(std::min<std::uint64_t>(bytes, room / unit * unit))};
  wp_[z] += io.bytes;
  if (full(z, unit)) close(z);
  return io;
}

std::optional<ZoneTable::Io> ZoneTable::place_read(std::uint64_t offset, std::uint32_t bytes, std::uint32_t unit,
                                                   std::uint64_t first, std::uint64_t end, bool sequential) {
  std::lock_guard lock(mutex_);
  const std::uint64_t z0 = std::clamp(offset / zone_size_, first, end - 1);
  const auto data = [&](std::uint64_t z) { return (wp_[z] - start(z)) / unit * unit; };
  if (offset >= start(z0) && offset + unit <= start(z0) + data(z0)) {
    const std::uint64_t left = start(z0) + data(z0) - offset;
    return Io{offset, static_cast<std::uint32_t>(std::min<std::uint64_t>(bytes, left))};
  }
  for (std::uint64_t i = 1; i <= end - first; ++i) {
    const std::uint64_t z = first + (z0 - first + i) % (end - first);
    const std::uint64_t have = data(z);
    if (have == 0) continue;
    const std::uint64_t into = sequential ? 0 : (offset - start(z0)) % have / unit * unit;
    return Io{start(z) + into, static_cast<std::uint32_t>(std::min<std::uint64_t>(bytes, have - into))};
  }
  return std::nullopt;
}

Result<std::shared_ptr<ZoneTable>> shared_zone_table(const std::string& path, std::uint64_t file_bytes,
                                                     std::uint64_t written_bytes, std::uint64_t zone_size,
                                                     std::uint64_t capacity, std::uint32_t max_open) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fail_errno("stat " + path);
  if (zone_size == 0) return fail(EINVAL, "zonemode=zbd: zonesize= is 0");
  if (file_bytes / zone_size > kMaxZones)
    return fail(EINVAL, "zonemode=zbd: " + std::to_string(file_bytes / zone_size) + " zones of " +
                            std::to_string(zone_size) + " bytes in " + path + " (at most " +
                            std::to_string(kMaxZones) + "; raise zonesize=)");
  static std::mutex mutex;
  static std::map<std::pair<dev_t, ino_t>, std::shared_ptr<ZoneTable>> tables;
  std::lock_guard lock(mutex);
  const bool device = S_ISBLK(st.st_mode);
  auto& table = tables[{device ? st.st_rdev : st.st_dev, device ? 0 : st.st_ino}];
  if (!table) {
    table = std::make_shared<ZoneTable>(file_bytes, zone_size, capacity, written_bytes, max_open);
  } else if (table->zone_size() != zone_size || table->capacity() != std::min(capacity, zone_size)) {
    return fail(EINVAL, "zonemode=zbd: " + path + " already has zones of " + std::to_string(table->zone_size()) +
                            " bytes (capacity " + std::to_string(table->capacity()) + ") from an earlier job");
  }
  return table;
}

bool is_zoned_block_device(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) return false;
  const std::string base = "/sys/dev/block/" + std::to_string(major(st.st_rdev)) + ":" +
                           std::to_string(minor(st.st_rdev));
  // A partition's queue is its disk's.
  for (const std::string& q : {base + "/queue/zoned", base + "/../queue/zoned"}) {
    std::ifstream in(q);
    std::string model;
    if (in >> model) return model != "none";
  }
  return false;
}

}  // namespace cxlpool::io
