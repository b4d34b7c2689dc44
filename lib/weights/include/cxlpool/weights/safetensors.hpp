// SPDX-License-Identifier: Apache-2.0
// The safetensors file format: an 8-byte little-endian header length N, N
// bytes of JSON, then the tensor bytes. The JSON maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end)} (offsets relative to the
// first byte after the header) plus an optional "__metadata__" string map.
//
// Parsing validates everything a loader trusts afterwards: the JSON itself,
// no duplicate names, known dtypes, shapes whose element count times the
// dtype size equals end - begin without overflow, offsets inside the file,
// no two tensors sharing a byte, and a limit on every size the file controls.
//
// The parse is one SAX pass (cost linear in the header's bytes) that stops
// at the first violation, so a hostile header costs at most max_header_bytes
// of reading. Error messages never quote the header-length prefix (for a
// file that is not a safetensors file those 8 bytes are its contents) and
// quote keys only when they are short plain text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/weights/dtype.hpp"

namespace cxlpool::weights {

inline constexpr size_t kSafetensorsPrefixBytes = 8;
inline constexpr size_t kMaxTensorDims = 8;  // CXLPOOL_WEIGHTS_MAX_DIMS

// Every size a file controls. A tensor name must also be free of control
// bytes (below 0x20, 0x7f; "\u0000" included), or the header is refused.
struct ParseLimits {
  uint64_t max_header_bytes = 100ull << 20;  // the format's own reference limit
  size_t max_tensors = 1u << 20;             // per file
  size_t max_name_bytes = 1024;
  size_t max_metadata_entries = 4096;
};

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // relative to the data section
  uint64_t end = 0;

  uint64_t bytes() const { return end - begin; }
};

struct SafetensorsHeader {
  uint64_t header_bytes = 0;  // N: the JSON's length, padding included
  uint64_t data_offset = 0;   // 8 + N: where the data section starts in the file
  uint64_t data_bytes = 0;    // file size - data_offset
  // In data order (by begin offset, then name): the order every consumer
  // indexes tensors by, so the daemon and clients agree on tensor indices.
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;

  const TensorInfo* find(std::string_view name) const;
  uint64_t tensor_offset_in_file(const TensorInfo& t) const { return data_offset + t.begin; }
};

// Checks the 8-byte prefix against the limits and the file size; returns N.
Result<uint64_t> parse_header_size(std::span<const std::byte> prefix, uint64_t file_size,
                                   const ParseLimits& limits = {});

// Parses and validates the N JSON bytes of a file of `file_size` bytes.
// Errors are EBADMSG with a message naming the offending tensor or field
// (or the byte offset of invalid JSON), including every limit above.
Result<SafetensorsHeader> parse_header(std::string_view json, uint64_t file_size,
                                       const ParseLimits& limits = {});

// The verbatim JSON of an open file's header and the file's size, read once
// (pread; the offset is untouched). EINVAL: not a regular file; EBADMSG: the
// length prefix breaks the limits or the file; errno of a failed read.
struct HeaderText {
  std::string json;
  uint64_t file_size = 0;
};
Result<HeaderText> read_header_text(int fd, const ParseLimits& limits = {});

// Reads and validates the header of an open file (pread; the offset is untouched).
Result<SafetensorsHeader> read_header(int fd, const ParseLimits& limits = {});
// Same for a path; the error message starts with the path.
Result<SafetensorsHeader> read_header_file(const std::string& path, const ParseLimits& limits = {});

}  // namespace cxlpool::weights
