// SPDX-License-Identifier: Apache-2.0
// Page identity inside the manager.
//
// The trackers count 64-bit keys, but a page is (address space, owner,
// address) -- more than 64 bits in general (a pid plus a 57-bit virtual
// address). Every page therefore gets a 52-bit id, a full-avalanche hash of
// the three fields: 52 bits leave room for a 6-bit word index (HWT keys are
// id << 6 | word) and for the 12-bit page offset the hot-word tracker expects
// (its addresses are id << 12 | word << 6). Two pages sharing an id is
// possible but rare (about n^2 / 2^53 for n pages in one epoch) and only
// merges their counts, which keeps every estimate an overestimate.
#pragma once

#include <cstdint>

#include "cxlpool/hal/access_source.hpp"
#include "cxlpool/tiering/m5_manager.hpp"
#include "cxlpool/tiering/mix.hpp"

namespace cxlpool::tiering::manager {

inline constexpr std::uint64_t kPageIdBits = 52;
inline constexpr std::uint64_t kWordsPerPage = 64;

constexpr std::uint64_t page_hash(const PageKey& key) {
  const std::uint64_t who = mix64(key.owner ^ (static_cast<std::uint64_t>(key.space) << 56));
  return mix64(who ^ (key.address >> hal::kAccessPageShift));
}

constexpr std::uint64_t page_id(const PageKey& key) { return page_hash(key) >> (64 - kPageIdBits); }

// The page an access names, aligned down to 4 KiB.
constexpr PageKey page_of(const hal::PageAccess& a) {
  return PageKey{a.space, a.owner, a.address & ~(hal::kAccessPageBytes - 1)};
}

// The n-th page of a run that starts at `first`.
constexpr PageKey page_in_run(const PageKey& first, std::uint64_t n) {
  return PageKey{first.space, first.owner, first.address + (n << hal::kAccessPageShift)};
}

}  // namespace cxlpool::tiering::manager
