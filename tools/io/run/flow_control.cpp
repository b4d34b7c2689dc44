// SPDX-License-Identifier: Apache-2.0
#include "flow_control.hpp"

namespace cxlpool::io {

FlowGroups::Flow& FlowGroups::join(std::int32_t id, std::uint32_t weight) {
  std::lock_guard lock(mu_);
  auto& slot = flows_[id];
  if (!slot) slot = std::make_unique<Flow>();
  slot->total_weight.fetch_add(weight, std::memory_order_relaxed);
  return *slot;
}

bool FlowMember::try_issue() {
  if (flow_ == nullptr) return true;
  const std::uint64_t all = flow_->count.load(std::memory_order_relaxed);
  const std::uint64_t weights = flow_->total_weight.load(std::memory_order_relaxed);
  // mine/all > weight/weights, without division (fio compares the ratios;
  // like fio, the shared count need not be exact).
  if (all != 0 && static_cast<unsigned __int128>(mine_) * weights > static_cast<unsigned __int128>(weight_) * all)
    return false;
  flow_->count.fetch_add(1, std::memory_order_relaxed);
  ++mine_;
  return true;
}

}  // namespace cxlpool::io
