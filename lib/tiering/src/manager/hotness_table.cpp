// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/manager/hotness_table.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>

#include "cxlpool/tiering/mix.hpp"

namespace cxlpool::tiering::manager {
namespace {

constexpr std::size_t kInitialSlots = 4096;
// Past this many half-lives a score is below float precision of any count.
constexpr std::uint32_t kMaxHalfLives = 64;

// 2^(-i / kHalfLifeEpochs) for the fractional part of an age.
struct Fractions {
  float f[HotnessTable::kHalfLifeEpochs];
  Fractions() {
    for (std::uint32_t i = 0; i < HotnessTable::kHalfLifeEpochs; ++i)
      f[i] = static_cast<float>(std::exp2(-static_cast<double>(i) / HotnessTable::kHalfLifeEpochs));
  }
};
const Fractions kFractions;

}  // namespace

HotnessTable::HotnessTable(std::size_t max_entries) : max_entries_(std::max<std::size_t>(max_entries, 16)) {
  slots_.resize(std::min(kInitialSlots, std::bit_ceil(max_entries_ * 2)));
}

float HotnessTable::aged(const Slot& s, std::uint32_t epoch) {
  if (epoch <= s.epoch) return s.score;
  const std::uint32_t age = epoch - s.epoch;
  const std::uint32_t halves = age / kHalfLifeEpochs;
  if (halves >= kMaxHalfLives) return 0.0f;
  return std::ldexp(s.score * kFractions.f[age % kHalfLifeEpochs], -static_cast<int>(halves));
}

double HotnessTable::steady_gain() { return 1.0 / (1.0 - std::exp2(-1.0 / kHalfLifeEpochs)); }

std::size_t HotnessTable::find_slot(std::uint64_t id) const {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = static_cast<std::size_t>(mix64(id)) & mask;; i = (i + 1) & mask) {
    if (slots_[i].id == id || slots_[i].id == kEmpty) return i;
  }
}

void HotnessTable::add(std::uint64_t id, std::uint64_t count, std::uint32_t epoch) {
  std::size_t i = find_slot(id);
  if (slots_[i].id == kEmpty) {
    if (size_ >= max_entries_) {
      evict_coldest(epoch);
      i = find_slot(id);
    } else if ((size_ + 1) * 2 > slots_.size()) {
      grow();
      i = find_slot(id);
    }
    slots_[i] = Slot{id, 0, epoch};
    ++size_;
  }
  Slot& s = slots_[i];
  s.score = aged(s, epoch) + static_cast<float>(count);
  s.epoch = std::max(s.epoch, epoch);
}

double HotnessTable::score(std::uint64_t id, std::uint32_t epoch) const {
  const Slot& s = slots_[find_slot(id)];
  return s.id == id ? aged(s, epoch) : 0.0;
}

void HotnessTable::forget(std::uint64_t id) {
  Slot& s = slots_[find_slot(id)];
  if (s.id == id) s.score = 0;
}

void HotnessTable::grow() {
  std::vector<Slot> keep;
  keep.reserve(size_);
  for (const Slot& s : slots_) {
    if (s.id != kEmpty) keep.push_back(s);
  }
  rehash(slots_.size() * 2, std::move(keep));
}

void HotnessTable::evict_coldest(std::uint32_t epoch) {
  std::vector<Slot> keep;
  keep.reserve(size_);
  for (const Slot& s : slots_) {
    if (s.id != kEmpty) keep.push_back(Slot{s.id, aged(s, epoch), std::max(s.epoch, epoch)});
  }
  const std::size_t drop = std::max<std::size_t>(keep.size() / 8, 1);
  std::nth_element(keep.begin(), keep.begin() + static_cast<std::ptrdiff_t>(drop), keep.end(),
                   [](const Slot& a, const Slot& b) { return a.score < b.score; });
  keep.erase(keep.begin(), keep.begin() + static_cast<std::ptrdiff_t>(drop));
  rehash(slots_.size(), std::move(keep));
}

void HotnessTable::rehash(std::size_t slots, std::vector<Slot> keep) {
  slots_.assign(slots, Slot{});
  size_ = 0;
  for (const Slot& s : keep) {
    slots_[find_slot(s.id)] = s;
    ++size_;
  }
}

}  // namespace cxlpool::tiering::manager
