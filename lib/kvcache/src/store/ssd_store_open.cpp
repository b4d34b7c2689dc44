// SPDX-License-Identifier: Apache-2.0
// SsdStore::open: geometry checks and the start-up index rebuild.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>

#include "cxlpool/kvcache/ssd_region_scan.hpp"
#include "cxlpool/kvcache/ssd_store.hpp"

namespace cxlpool::kvcache {

namespace {

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

constexpr std::uint32_t kMaxWriteBuffers = 16;

// An alignment the 4 KiB on-disk layout satisfies.
bool divides_block(std::uint32_t alignment) {
  return alignment != 0 && alignment <= kSsdBlockBytes && kSsdBlockBytes % alignment == 0;
}

}  // namespace

Result<std::unique_ptr<SsdStore>> SsdStore::open(std::unique_ptr<hal::BlockDevice> device,
                                                 const SsdStoreConfig& config) {
  if (!device) return fail(EINVAL, "ssd store: no block device");
  if (auto ok = validate_region_bytes(config.region_bytes); !ok) return tl::unexpected(ok.error());
  if (!divides_block(device->mem_alignment()) || !divides_block(device->offset_alignment())) {
    return fail(EINVAL, "ssd store: " + device->path() + " needs an alignment that does not divide 4096");
  }
  if (config.reinsert_max_percent > 90) return fail(EINVAL, "ssd store: reinsert_max_percent above 90");
  if (config.index_capacity == 0) return fail(EINVAL, "ssd store: index_capacity is 0");
  std::uint64_t count = device->size() / config.region_bytes;
  if (config.max_regions != 0) count = std::min<std::uint64_t>(count, config.max_regions);
  count = std::min<std::uint64_t>(count, UINT32_MAX);
  if (count < 2) {
    return fail(ENOSPC, "ssd store: " + device->path() + " holds fewer than 2 regions of " +
                            std::to_string(config.region_bytes) + " bytes");
  }
  if (config.write_buffers == 0 || config.write_buffers > kMaxWriteBuffers) {
    return fail(EINVAL, "ssd store: write_buffers must be 1.." + std::to_string(kMaxWriteBuffers));
  }
  // Per commit, entries go to the device as they are appended: one buffer.
  const std::uint32_t buffers = config.sync == SsdSyncPolicy::kPerRegion ? config.write_buffers : 1;
  std::vector<RegionWriter> writers;
  for (std::uint32_t i = 0; i < buffers; ++i) {
    auto writer = RegionWriter::create(config.region_bytes);
    if (!writer) return tl::unexpected(writer.error());
    writers.push_back(std::move(*writer));
  }
  std::unique_ptr<SsdStore> store(
      new SsdStore(std::move(device), config, std::move(writers), static_cast<std::uint32_t>(count)));
  if (auto ok = store->recover(); !ok) return tl::unexpected(ok.error());
  // Fixed buffers spare pinning a region's pages on every write; a device
  // that refuses them gets plain writes.
  (void)store->register_buffers({});
  return store;
}

SsdStore::SsdStore(std::unique_ptr<hal::BlockDevice> device, const SsdStoreConfig& config,
                   std::vector<RegionWriter> writers, std::uint32_t region_count)
    : device_(std::move(device)), config_(config), writers_(std::move(writers)), regions_(region_count) {
  for (std::size_t i = writers_.size(); i > 0; --i) free_buffers_.push_back(static_cast<std::int32_t>(i - 1));
  // Room for every region write plus the fdatasync after them, so that a
  // queue full of reads never holds a seal up (at most half the queue).
  if (config_.sync == SsdSyncPolicy::kPerRegion) {
    write_reserve_ = std::min<std::uint32_t>(static_cast<std::uint32_t>(writers_.size()) + 1,
                                             device_->queue_depth() / 2);
  }
  pending_.resize(device_->queue_depth());
  if (config_.staging_bytes != 0) {
    for (std::uint32_t i = 0; i < config_.read_staging; ++i) {
      const std::size_t bytes = align_up_block(config_.staging_bytes);
      staging_.emplace_back(static_cast<std::byte*>(std::aligned_alloc(kSsdBlockBytes, bytes)));
      if (!staging_.back()) {  // no memory: fewer staging buffers, reads go direct
        staging_.pop_back();
        break;
      }
    }
    for (std::size_t i = staging_.size(); i > 0; --i) free_staging_.push_back(static_cast<std::int32_t>(i - 1));
  }
  for (std::size_t i = pending_.size(); i > 0; --i) free_tags_.push_back(static_cast<std::uint32_t>(i - 1));
}

// Reads every region whole and keeps, per key, the entry with the largest
// sequence; a key whose newest entry is a tombstone is not indexed. Regions
// that hold nothing (never written, or a header that does not decode) are free.
Result<void> SsdStore::recover() {
  auto* raw = static_cast<std::byte*>(std::aligned_alloc(kSsdBlockBytes, config_.region_bytes));
  if (raw == nullptr) return fail(ENOMEM, "ssd store: scan buffer");
  std::unique_ptr<std::byte, FreeDeleter> buffer(raw);

  struct Found {
    Slot slot;
    bool tombstone = false;
  };
  std::unordered_map<ChunkKey, Found, ChunkKeyHash> found;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> live;  // (generation, region)
  std::uint64_t max_generation = 0, max_sequence = 0;

  for (std::uint32_t r = 0; r < regions_.size(); ++r) {
    auto got = device_->read(region_base(r), raw, kSsdBlockBytes);
    if (!got) return fail(got.error().code, "ssd store: reading region " + std::to_string(r) + " header: " +
                                                got.error().message);
    auto header = decode_region_header({raw, *got});
    if (!header) {
      if (header.error().code != ENODATA) ++stats_.damaged_regions;
      free_.push_back(r);
      continue;
    }
    const std::uint32_t length = header->sealed() ? header->used_bytes : config_.region_bytes;
    got = device_->read(region_base(r), raw, length);
    if (!got) return fail(got.error().code, "ssd store: reading region " + std::to_string(r) + ": " +
                                                got.error().message);
    ScanOptions options;
    options.region_bytes = config_.region_bytes;
    options.region_index = r;
    auto scan = scan_region({raw, *got}, options);
    if (!scan) {
      ++stats_.damaged_regions;
      free_.push_back(r);
      continue;
    }
    if (!scan->clean) ++stats_.damaged_regions;
    stats_.corrupt_dropped += scan->dropped.size();
    for (const ScannedEntry& d : scan->dropped) max_sequence = std::max(max_sequence, d.header.sequence);
    Region& region = regions_[r];
    region.generation = header->generation;
    max_generation = std::max(max_generation, header->generation);
    live.emplace_back(header->generation, r);
    for (const ScannedEntry& e : scan->entries) {
      const EntryHeader& h = e.header;
      max_sequence = std::max(max_sequence, h.sequence);
      region.keys.push_back(h.key);
      auto [it, inserted] = found.try_emplace(h.key);
      if (!inserted && it->second.slot.sequence >= h.sequence) continue;
      it->second.tombstone = h.tombstone();
      it->second.slot = Slot{r, e.payload_offset, h.payload_bytes, h.payload_crc, h.sequence, h.ns, 0};
    }
  }

  std::sort(live.begin(), live.end());
  for (const auto& [generation, r] : live) fifo_.push_back(r);
  index_.reserve(std::min(found.size(), config_.index_capacity));
  for (const auto& [key, f] : found) {
    if (!f.tombstone) index_.emplace(key, f.slot);
  }
  stats_.recovered_entries = index_.size();
  next_generation_ = max_generation + 1;
  next_sequence_ = max_sequence + 1;
  durable_sequence_ = max_sequence;
  return {};
}

}  // namespace cxlpool::kvcache
