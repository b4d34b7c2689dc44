// SPDX-License-Identifier: Apache-2.0
#include "lease_table.hpp"

namespace cxlpool::kvcache {

std::uint64_t LeaseTable::open(std::uint64_t client, Lease** lease) {
  std::uint32_t index = 0;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(entries_.size());
    entries_.emplace_back();
  }
  Entry& e = entries_[index];
  ++e.generation;  // starts at 1, so no id is 0 and no old id matches
  e.in_use = true;
  e.lease.client = client;
  e.lease.bytes = 0;
  e.lease.opened_ns = 0;
  e.lease.keys.clear();
  ++live_;
  *lease = &e.lease;
  return make_id(index, e.generation);
}

Lease* LeaseTable::find(std::uint64_t id) {
  const std::uint64_t low = id & 0xffffffffu;
  if (low == 0 || low > entries_.size()) return nullptr;
  Entry& e = entries_[low - 1];
  if (!e.in_use || e.generation != static_cast<std::uint32_t>(id >> 32)) return nullptr;
  return &e.lease;
}

void LeaseTable::close(std::uint64_t id) {
  const std::uint64_t low = id & 0xffffffffu;
  if (low == 0 || low > entries_.size()) return;
  Entry& e = entries_[low - 1];
  if (!e.in_use || e.generation != static_cast<std::uint32_t>(id >> 32)) return;
  e.in_use = false;
  free_.push_back(static_cast<std::uint32_t>(low - 1));
  --live_;
}

void LeaseTable::ids_of(std::uint64_t client, std::vector<std::uint64_t>& out) const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.in_use && e.lease.client == client) out.push_back(make_id(static_cast<std::uint32_t>(i), e.generation));
  }
}

void LeaseTable::opened_before(std::uint64_t opened_before_ns, std::vector<std::uint64_t>& out) const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.in_use && e.lease.opened_ns <= opened_before_ns) {
      out.push_back(make_id(static_cast<std::uint32_t>(i), e.generation));
    }
  }
}

}  // namespace cxlpool::kvcache
