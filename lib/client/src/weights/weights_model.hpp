// SPDX-License-Identifier: Apache-2.0
// A loaded model as a client sees it: the shared region mapped read-only,
// its layout validated (lib/weights parse_region), and one flat tensor table
// in the order cxlpool_weights_tensor indexes it (files in load order, each
// file's tensors in data order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/weights.h"
#include "cxlpool/weights/region_layout.hpp"

namespace cxlpool::client {

class WeightsModel {
 public:
  // Takes the read-only mapping of the whole region.
  static Result<std::unique_ptr<WeightsModel>> create(Mapping region);

  size_t count() const { return tensors_.size(); }
  int layers() const { return static_cast<int>(layer_tensors_.size()); }
  const cxlpool_weight_tensor& tensor(size_t index) const { return tensors_[index]; }
  // SIZE_MAX when absent.
  size_t find(std::string_view name) const;
  const std::vector<size_t>& layer(size_t layer) const { return layer_tensors_[layer]; }
  const std::vector<std::string>& paths() const { return paths_; }
  const std::byte* base() const { return region_.data(); }
  uint64_t region_bytes() const { return region_.length(); }
  uint64_t resident_bytes() const { return view_.resident_bytes; }

 private:
  WeightsModel() = default;
  Mapping region_;
  weights::RegionView view_;
  std::vector<std::string> names_;
  std::vector<std::string> paths_;
  std::vector<cxlpool_weight_tensor> tensors_;
  std::vector<std::vector<size_t>> layer_tensors_;
};

}  // namespace cxlpool::client
