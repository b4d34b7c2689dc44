// SPDX-License-Identifier: Apache-2.0
#include "arena_core.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "cxlpool/common/clock.hpp"

namespace cxlpool::client::arena {

Result<std::unique_ptr<ArenaCore>> ArenaCore::create(const ArenaGeometry& geometry, std::unique_ptr<hal::GpuVmm> vmm,
                                                     std::unique_ptr<BackingSource> source, uint64_t memory_limit,
                                                     PagePlacement placement) {
  if (!vmm || !source) return fail(EINVAL, "kv arena: no backend");
  if (geometry.page_bytes % vmm->granularity() != 0) {
    return fail(EINVAL, "kv arena: page_bytes is not a multiple of the backend's granularity");
  }
  auto base = vmm->reserve(geometry.total_bytes);
  if (!base) return tl::unexpected(base.error());
  return std::unique_ptr<ArenaCore>(new ArenaCore(geometry, std::move(vmm), *base, std::move(source), memory_limit, placement));
}

ArenaCore::ArenaCore(const ArenaGeometry& geometry, std::unique_ptr<hal::GpuVmm> vmm, uint64_t base,
                     std::unique_ptr<BackingSource> source, uint64_t memory_limit, PagePlacement placement)
    : geo_(geometry),
      vmm_(std::move(vmm)),
      base_(base),
      pool_(*vmm_, std::move(source), geometry.page_bytes, geometry.region_bytes, placement),
      limit_(memory_limit),
      rows_(geometry.max_batch) {}

ArenaCore::~ArenaCore() {
  // Unmap piece by piece first: a device backend does not take a range
  // back while memory is mapped into it.
  for (uint32_t r = 0; r < rows_.size(); ++r) {
    for (uint32_t i = 0; i < rows_[r].pages; ++i) {
      for (uint32_t s = 0; s < geo_.tensors; ++s) (void)vmm_->unmap(va(s, r, i), geo_.page_bytes);
    }
  }
  (void)vmm_->release_range(base_, geo_.total_bytes);
  pool_.release_all();
}

Result<uint32_t> ArenaCore::alloc_reqid() {
  // The freed row with the most pages still mapped: its memory is reused in
  // place, with no mapping call at all.
  int best = -1;
  // A freed row that a copy still pins is not free yet.
  for (uint32_t r = 0; r < rows_.size(); ++r) {
    if (rows_[r].active || rows_[r].pins != 0) continue;
    if (best < 0 || rows_[r].pages > rows_[static_cast<size_t>(best)].pages) best = static_cast<int>(r);
  }
  if (best < 0) {
    return fail(ENOSPC, "kv arena: all " + std::to_string(rows_.size()) +
                            " reqids are in use (or freed with an offload/restore still copying them)");
  }
  auto& row = rows_[static_cast<size_t>(best)];
  row.active = true;
  const uint64_t pages = uint64_t{row.pages} * geo_.tensors;
  deferred_pages_ -= pages;
  reuses_ += pages;
  ++rows_active_;
  return static_cast<uint32_t>(best);
}

Result<void> ArenaCore::free_reqid(uint32_t r) {
  if (!active(r)) return fail(ENOENT, "kv arena: reqid " + std::to_string(r) + " is not allocated");
  rows_[r].active = false;
  deferred_pages_ += uint64_t{rows_[r].pages} * geo_.tensors;
  --rows_active_;
  return {};
}

uint32_t ArenaCore::mapped_tokens(uint32_t r) const {
  if (r >= rows_.size()) return 0;
  const uint64_t tokens = uint64_t{rows_[r].pages} * geo_.page_bytes / geo_.token_bytes;
  return static_cast<uint32_t>(std::min<uint64_t>(tokens, geo_.max_context));
}

Result<void> ArenaCore::validate(std::span<const uint32_t> seq_lens) const {
  if (seq_lens.size() > rows_.size()) return fail(EINVAL, "kv arena: more seq_lens than max_batch");
  for (size_t r = 0; r < seq_lens.size(); ++r) {
    if (seq_lens[r] > geo_.max_context) {
      return fail(ERANGE, "kv arena: seq_len " + std::to_string(seq_lens[r]) + " of reqid " + std::to_string(r) +
                              " exceeds max_context " + std::to_string(geo_.max_context));
    }
    if (seq_lens[r] != 0 && !rows_[r].active) {
      return fail(ENOENT, "kv arena: seq_len given for reqid " + std::to_string(r) + ", which is not allocated");
    }
  }
  return {};
}

bool ArenaCore::satisfied(std::span<const uint32_t> seq_lens, uint32_t lookahead) const {
  for (size_t r = 0; r < seq_lens.size(); ++r) {
    if (seq_lens[r] == 0 || !rows_[r].active) continue;
    const uint32_t want = std::min<uint64_t>(uint64_t{seq_lens[r]} + lookahead, geo_.max_context);
    if (geo_.pages_for(want) > rows_[r].pages) return false;
  }
  return true;
}

uint64_t ArenaCore::deferred_groups() const {
  // Freed rows a copy still pins cannot give their pages away.
  uint64_t groups = 0;
  for (const auto& row : rows_) {
    if (!row.active && row.pins == 0) groups += row.pages;
  }
  return groups;
}

bool ArenaCore::fresh_fits() const {
  return limit_ == 0 || (mapped_pages_ * geo_.page_bytes + group_bytes() <= limit_);
}

Result<void> ArenaCore::step(std::span<const uint32_t> seq_lens, uint32_t lookahead,
                             const std::atomic<bool>* stop_ahead) {
  if (auto v = validate(seq_lens); !v) return v;
  // All-or-nothing for the guaranteed part under a limit: count first.
  uint64_t need = 0;
  for (size_t r = 0; r < seq_lens.size(); ++r) {
    if (!rows_[r].active) continue;
    const uint32_t want = geo_.pages_for(seq_lens[r]);
    if (want > rows_[r].pages) need += want - rows_[r].pages;
  }
  if (need == 0 && lookahead == 0) return {};
  if (limit_ != 0 && need > 0) {
    const uint64_t used = mapped_pages_ * geo_.page_bytes;
    const uint64_t fresh = used >= limit_ ? 0 : (limit_ - used) / group_bytes();
    if (need > fresh + deferred_groups()) {
      return fail(ENOMEM, "kv arena: step needs " + std::to_string(need * group_bytes()) + " more bytes; " +
                              std::to_string(used) + " of memory_limit_bytes " + std::to_string(limit_) +
                              " are mapped and " + std::to_string(deferred_groups() * group_bytes()) +
                              " could be reclaimed");
    }
  }
  for (size_t r = 0; r < seq_lens.size(); ++r) {
    if (!rows_[r].active) continue;
    if (auto g = grow_row(static_cast<uint32_t>(r), seq_lens[r]); !g) return g;
  }
  // Map-ahead is speculative: only fresh memory under the limit, and a
  // failure is not the step's failure.
  if (lookahead != 0) {
    for (size_t r = 0; r < seq_lens.size(); ++r) {
      if (!rows_[r].active || seq_lens[r] == 0) continue;
      const uint32_t want = geo_.pages_for(std::min<uint64_t>(uint64_t{seq_lens[r]} + lookahead, geo_.max_context));
      while (rows_[r].pages < want && fresh_fits()) {
        if (stop_ahead != nullptr && stop_ahead->load(std::memory_order_relaxed)) return {};
        if (!add_group(static_cast<uint32_t>(r))) break;
      }
    }
  }
  return {};
}

Result<void> ArenaCore::grow_row(uint32_t r, uint32_t tokens) {
  if (!active(r)) return fail(ENOENT, "kv arena: reqid " + std::to_string(r) + " is not allocated");
  if (tokens > geo_.max_context) return fail(ERANGE, "kv arena: more tokens than max_context");
  const uint32_t want = geo_.pages_for(tokens);
  while (rows_[r].pages < want) {
    if (auto g = add_group(r); !g) return g;
  }
  return {};
}

int ArenaCore::victim_row() const {
  // The freed row with the fewest pages: emptying small rows first keeps
  // whole large rows ready for alloc_reqid to reuse in place.
  int best = -1;
  for (uint32_t r = 0; r < rows_.size(); ++r) {
    if (rows_[r].active || rows_[r].pins != 0 || rows_[r].pages == 0) continue;
    if (best < 0 || rows_[r].pages < rows_[static_cast<size_t>(best)].pages) best = static_cast<int>(r);
  }
  return best;
}

Result<void> ArenaCore::add_group(uint32_t r) {
  scratch_.clear();
  Error fresh_error{ENOMEM, "kv arena: over memory_limit_bytes and no freed pages to reclaim"};
  if (fresh_fits()) {
    bool ok = true;
    const auto& row = rows_[r];
    for (uint32_t s = 0; s < geo_.tensors; ++s) {
      // After the tensor's previous page of this row: its file successor
      // continues the same VMA.
      const PhysPage* after = row.pages == 0 ? nullptr : &row.table[size_t{row.pages - 1} * geo_.tensors + s];
      auto page = pool_.take(after);
      if (!page) {
        fresh_error = page.error();
        ok = false;
        break;
      }
      scratch_.push_back(*page);
    }
    if (ok) return map_group(r, scratch_);
    for (const auto& p : scratch_) pool_.put(p, false);
    scratch_.clear();
  }
  // Reclaim under pressure: a freed row's tail pages move here.
  const int victim = victim_row();
  if (victim < 0) return tl::unexpected(fresh_error);
  if (auto t = take_tail(static_cast<uint32_t>(victim), &scratch_); !t) return t;
  reuses_ += geo_.tensors;
  return map_group(r, scratch_);
}

Result<void> ArenaCore::map_group(uint32_t r, const std::vector<PhysPage>& pages) {
  auto& row = rows_[r];
  for (uint32_t s = 0; s < geo_.tensors; ++s) {
    if (auto m = timed_map(va(s, r, row.pages), pages[s]); !m) {
      for (uint32_t u = 0; u < s; ++u) (void)timed_unmap(va(u, r, row.pages));
      for (const auto& p : pages) pool_.put(p, false);
      return m;
    }
  }
  row.table.insert(row.table.end(), pages.begin(), pages.end());
  ++row.pages;
  mapped_pages_ += geo_.tensors;
  return {};
}

Result<void> ArenaCore::take_tail(uint32_t victim, std::vector<PhysPage>* out) {
  auto& row = rows_[victim];
  const uint32_t last = row.pages - 1;
  for (uint32_t s = 0; s < geo_.tensors; ++s) {
    if (auto u = timed_unmap(va(s, victim, last)); !u) {
      // Keep the table truthful: the pages unmapped so far are out.
      return u;
    }
  }
  const size_t from = size_t{last} * geo_.tensors;
  out->insert(out->end(), row.table.begin() + static_cast<std::ptrdiff_t>(from), row.table.end());
  row.table.resize(from);
  --row.pages;
  deferred_pages_ -= geo_.tensors;
  mapped_pages_ -= geo_.tensors;
  return {};
}

Result<void> ArenaCore::trim(uint64_t keep_bytes) {
  while (mapped_pages_ * geo_.page_bytes > keep_bytes) {
    const int victim = victim_row();
    if (victim < 0) break;
    scratch_.clear();
    if (auto t = take_tail(static_cast<uint32_t>(victim), &scratch_); !t) return t;
    for (const auto& p : scratch_) pool_.put(p, true);
  }
  pool_.release_empty();
  return {};
}

Result<void> ArenaCore::timed_map(uint64_t address, PhysPage page) {
  const uint64_t t0 = monotonic_ns();
  auto m = vmm_->map(address, geo_.page_bytes, pool_.handle(page), pool_.offset(page));
  map_ns_max_ = std::max(map_ns_max_, monotonic_ns() - t0);
  return m;
}

Result<void> ArenaCore::timed_unmap(uint64_t address) { return vmm_->unmap(address, geo_.page_bytes); }

CoreStats ArenaCore::stats() const {
  const auto v = vmm_->stats();
  CoreStats s;
  s.reserved_bytes = geo_.total_bytes;
  s.mapped_bytes = mapped_pages_ * geo_.page_bytes;
  s.pages_deferred = deferred_pages_;
  s.pages_in_use = mapped_pages_ - deferred_pages_;
  s.held_bytes = pool_.held_bytes();
  s.maps = v.maps;
  s.unmaps = v.unmaps;
  s.reuses = reuses_;
  s.map_ns_total = v.map_ns;
  s.unmap_ns_total = v.unmap_ns;
  s.map_ns_max = map_ns_max_;
  s.rows_active = rows_active_;
  return s;
}

}  // namespace cxlpool::client::arena
