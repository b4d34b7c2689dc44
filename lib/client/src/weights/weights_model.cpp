// SPDX-License-Identifier: Apache-2.0
#include "weights_model.hpp"

#include <cstring>

#include "cxlpool/weights/layer_group.hpp"

namespace cxlpool::client {

Result<std::unique_ptr<WeightsModel>> WeightsModel::create(Mapping region) {
  std::unique_ptr<WeightsModel> m(new WeightsModel());
  auto view = weights::parse_region(std::span<const std::byte>(region.data(), region.length()));
  if (!view) return tl::unexpected(view.error());
  m->region_ = std::move(region);
  m->view_ = std::move(*view);
  std::vector<int32_t> layer_of;
  for (uint32_t f = 0; f < m->view_.files.size(); ++f) {
    const auto& file = m->view_.files[f];
    m->paths_.push_back(file.path);
    for (size_t t = 0; t < file.header.tensors.size(); ++t) {
      const auto& ti = file.header.tensors[t];
      cxlpool_weight_tensor c{};
      c.dtype = static_cast<uint32_t>(ti.dtype);
      c.ndim = static_cast<uint32_t>(ti.shape.size());
      for (size_t d = 0; d < ti.shape.size(); ++d) c.shape[d] = ti.shape[d];
      c.bytes = ti.bytes();
      c.data = file.tensor_offset[t] == weights::kNotResident ? nullptr : m->region_.data() + file.tensor_offset[t];
      c.layer = weights::layer_of(ti.name);
      c.file_index = f;
      c.file_offset = file.header.tensor_offset_in_file(ti);
      layer_of.push_back(c.layer);
      m->names_.push_back(ti.name);
      m->tensors_.push_back(c);
    }
  }
  // Names are stable now that the vector is complete.
  for (size_t i = 0; i < m->tensors_.size(); ++i) m->tensors_[i].name = m->names_[i].c_str();
  m->layer_tensors_ = weights::group_by_layer(layer_of).layers;
  return m;
}

size_t WeightsModel::find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return i;
  }
  return SIZE_MAX;
}

}  // namespace cxlpool::client
