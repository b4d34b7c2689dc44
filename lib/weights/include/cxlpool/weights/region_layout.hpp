// SPDX-License-Identifier: Apache-2.0
// The layout of a loaded model's shared region ("cxlpool-w-<model>"), which
// the daemon writes once and every client maps read-only:
//
//   [0, 64)            RegionSuperblock
//   [64, ...)          RegionFileRecord per file
//   then               per file, one u64 per tensor (data order): its offset
//                      in the region, or kNotResident
//   then               per file, its path and its verbatim JSON header
//   4 KiB-aligned      per file, its resident tensors packed in data order,
//                      each kTensorAlign-aligned; each file starts 4 KiB-aligned
//
// All integers little-endian (the host's; the region never leaves the host).
// Clients re-parse the JSON headers with parse_header, so names, dtypes and
// shapes are validated the same way on both sides; parse_region also checks
// every offset against the region's size, so a client trusts nothing it has
// not checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/weights/safetensors.hpp"

namespace cxlpool::weights {

inline constexpr uint64_t kRegionMagic = 0x31535457504c5843ull;  // "CXLPWTS1"
inline constexpr uint32_t kRegionVersion = 1;
inline constexpr uint64_t kRegionFileAlign = 4096;
inline constexpr uint64_t kTensorAlign = 64;
inline constexpr uint64_t kNotResident = ~0ull;
inline constexpr uint32_t kMaxRegionFiles = 1024;

struct RegionSuperblock {
  uint64_t magic;
  uint32_t version;
  uint32_t n_files;
  uint64_t n_tensors;
  uint64_t tensor_bytes;    // every tensor, resident or not
  uint64_t resident_bytes;  // the tensors in the region
  uint64_t region_bytes;
  uint64_t files_offset;
  uint64_t reserved;
};
static_assert(sizeof(RegionSuperblock) == 64);

struct RegionFileRecord {
  uint64_t path_offset;
  uint64_t path_bytes;
  uint64_t header_offset;  // the file's JSON header, N bytes
  uint64_t header_bytes;
  uint64_t file_size;
  uint64_t table_offset;   // n_tensors u64 region offsets
  uint64_t n_tensors;
  uint64_t data_base;      // where its resident tensors start (4 KiB-aligned)
};
static_assert(sizeof(RegionFileRecord) == 64);

// One file as the loader saw it.
struct LoadedFile {
  std::string path;
  std::string header_json;  // verbatim, N bytes
  uint64_t file_size = 0;
  SafetensorsHeader header;
};

// Reads and validates an open file's header, keeping the JSON verbatim.
// Errors name `path`.
Result<LoadedFile> read_loaded_file(int fd, std::string path, const ParseLimits& limits = {});

// resident[f][t]: tensor t (data order) of file f goes into the region.
using Residency = std::vector<std::vector<bool>>;

// Global tensors always; with max_resident_bytes == 0 everything; else
// layers 0, 1, ... while their bytes (across all files) fit what the
// globals leave of the budget. The first layer that does not fit and every
// later one stay in their files.
Residency choose_residency(const std::vector<LoadedFile>& files, uint64_t max_resident_bytes);

struct RegionPlan {
  uint64_t region_bytes = 0;  // a multiple of kRegionFileAlign
  uint64_t meta_bytes = 0;    // superblock, records, tables, strings
  uint64_t tensor_bytes = 0;
  uint64_t resident_bytes = 0;
  uint64_t n_tensors = 0;
  std::vector<uint64_t> data_base;                   // per file
  std::vector<std::vector<uint64_t>> tensor_offset;  // per file, per tensor
};
Result<RegionPlan> plan_region(const std::vector<LoadedFile>& files, const Residency& resident);

// Writes everything but the tensor bytes into `region` (region_bytes long,
// zero-filled). The loader then copies each resident tensor to its offset.
Result<void> write_region_meta(std::span<std::byte> region, const std::vector<LoadedFile>& files,
                               const RegionPlan& plan);

struct RegionFileView {
  std::string path;
  uint64_t file_size = 0;
  SafetensorsHeader header;
  std::vector<uint64_t> tensor_offset;  // kNotResident or a checked region offset
};
struct RegionView {
  uint64_t tensor_bytes = 0;
  uint64_t resident_bytes = 0;
  uint64_t n_tensors = 0;
  std::vector<RegionFileView> files;
};
// Validates and decodes a mapped region. EBADMSG when anything is off.
Result<RegionView> parse_region(std::span<const std::byte> region);

}  // namespace cxlpool::weights
