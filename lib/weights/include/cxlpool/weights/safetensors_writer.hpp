// SPDX-License-Identifier: Apache-2.0
// Writes safetensors files: tensors in the order they were added, packed with
// no gaps, the header padded with spaces so the data section starts 8-byte
// aligned (what the format's reference writer does). The output passes
// parse_header and any standard safetensors reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/weights/dtype.hpp"

namespace cxlpool::weights {

class SafetensorsWriter {
 public:
  // Copies `data`; EINVAL when its size is not the shape's element count
  // times the dtype size, the name is empty/reserved/too long or taken, or
  // there are more than kMaxTensorDims dimensions.
  Result<void> add(std::string name, Dtype dtype, std::vector<uint64_t> shape,
                   std::span<const std::byte> data);
  // Convenience for f32 tensors.
  Result<void> add_f32(std::string name, std::vector<uint64_t> shape, std::span<const float> data);
  void set_metadata(std::string key, std::string value);

  size_t tensor_count() const { return tensors_.size(); }
  // The JSON header, padded; its length is the file's N.
  std::string header_json() const;
  // The whole file's bytes.
  std::vector<std::byte> serialize() const;
  // Writes to `path` through a temporary file renamed into place.
  Result<void> write_file(const std::string& path) const;

 private:
  struct Pending {
    std::string name;
    Dtype dtype;
    std::vector<uint64_t> shape;
    std::vector<std::byte> data;
  };
  std::vector<Pending> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace cxlpool::weights
