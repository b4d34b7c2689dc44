// SPDX-License-Identifier: Apache-2.0
#include "layer_plan.hpp"

#include <algorithm>

namespace cxlpool::client {
namespace {

constexpr uint64_t kTensorAlign = 64;

uint64_t up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
uint64_t down(uint64_t v, uint64_t a) { return v / a * a; }

}  // namespace

LayerPlan plan_layer(const WeightsModel& model, size_t layer, uint64_t align, uint64_t merge_gap) {
  LayerPlan plan;
  const auto& members = model.layer(layer);
  plan.tensor_dst.assign(members.size(), 0);
  for (size_t i = 0; i < members.size(); ++i) plan.tensor_index.push_back(static_cast<uint32_t>(members[i]));
  uint64_t at = 0;
  // Resident tensors first, packed.
  std::vector<size_t> in_files;
  for (size_t i = 0; i < members.size(); ++i) {
    const auto& t = model.tensor(members[i]);
    plan.payload_bytes += t.bytes;
    if (t.data == nullptr) {
      in_files.push_back(i);
      continue;
    }
    at = up(at, kTensorAlign);
    plan.ops.push_back(CopyOp{false, 0, static_cast<const std::byte*>(t.data), 0, t.bytes, at});
    plan.tensor_dst[i] = at;
    at += t.bytes;
    plan.region_bytes += t.bytes;
  }
  // File tensors by file then offset, merged into aligned spans.
  std::sort(in_files.begin(), in_files.end(), [&](size_t a, size_t b) {
    const auto& ta = model.tensor(members[a]);
    const auto& tb = model.tensor(members[b]);
    return ta.file_index != tb.file_index ? ta.file_index < tb.file_index : ta.file_offset < tb.file_offset;
  });
  size_t i = 0;
  while (i < in_files.size()) {
    const auto& first = model.tensor(members[in_files[i]]);
    uint64_t begin = first.file_offset;
    uint64_t end = first.file_offset + first.bytes;
    size_t j = i + 1;
    while (j < in_files.size()) {
      const auto& t = model.tensor(members[in_files[j]]);
      if (t.file_index != first.file_index || t.file_offset > end + merge_gap) break;
      end = std::max(end, t.file_offset + t.bytes);
      ++j;
    }
    uint64_t span_begin = down(begin, align);
    uint64_t span_end = up(end, align);
    at = up(at, align);
    plan.ops.push_back(CopyOp{true, first.file_index, nullptr, span_begin, span_end - span_begin, at});
    for (size_t k = i; k < j; ++k) {
      const auto& t = model.tensor(members[in_files[k]]);
      plan.tensor_dst[in_files[k]] = at + (t.file_offset - span_begin);
    }
    plan.file_bytes += span_end - span_begin;
    at += span_end - span_begin;
    i = j;
  }
  plan.slot_bytes = up(at, align);
  return plan;
}

}  // namespace cxlpool::client
