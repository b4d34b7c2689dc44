// SPDX-License-Identifier: Apache-2.0
#include "block_size_picker.hpp"

#include <algorithm>
#include <string>

namespace cxlpool::io {
namespace {

const char* dir_name(int direction) { return direction == kReadDir ? "read" : "write"; }

}  // namespace

Result<BlockSizePicker> BlockSizePicker::make(const JobSpec& job, int d, std::uint32_t align) {
  BlockSizePicker p;
  const auto check = [&](std::uint32_t bytes, const char* what) -> Result<void> {
    if (bytes == 0) return fail(EINVAL, job.name + ": " + what + " of 0 bytes");
    if (align > 1 && bytes % align != 0)
      return fail(EINVAL, job.name + ": " + what + " " + std::to_string(bytes) + " (" + dir_name(d) +
                              ") is not a multiple of the device's alignment " + std::to_string(align));
    return {};
  };
  if (!job.bssplit[d].empty()) {
    std::uint32_t given = 0, unset = 0;
    for (const BlockSizeShare& s : job.bssplit[d]) {
      if (auto ok = check(s.bytes, "bssplit size"); !ok) return tl::unexpected(ok.error());
      given += s.percent;
      if (s.percent == 0) ++unset;
    }
    if (given > 100) return fail(EINVAL, job.name + ": bssplit shares add up to " + std::to_string(given) + "%");
    if (unset == 0 && given != 100)
      return fail(EINVAL, job.name + ": bssplit shares add up to " + std::to_string(given) + "%, not 100%");
    const double each_unset = unset ? static_cast<double>(100 - given) / unset : 0;
    double cum = 0;
    p.min_ = ~0u;
    for (const BlockSizeShare& s : job.bssplit[d]) {
      cum += s.percent ? s.percent : each_unset;
      p.shares_.push_back({s.bytes, static_cast<std::uint32_t>(cum * kScale / 100 + 0.5)});
      p.min_ = std::min(p.min_, s.bytes);
      p.max_ = std::max(p.max_, s.bytes);
    }
    p.shares_.back().cumulative = kScale;
    return p;
  }
  if (job.bsrange_min[d] != 0 || job.bsrange_max[d] != 0) {
    p.min_ = job.bsrange_min[d];
    p.max_ = job.bsrange_max[d];
    if (auto ok = check(p.min_, "bsrange minimum"); !ok) return tl::unexpected(ok.error());
    if (auto ok = check(p.max_, "bsrange maximum"); !ok) return tl::unexpected(ok.error());
    if (p.max_ < p.min_) return fail(EINVAL, job.name + ": bsrange maximum below its minimum");
    // Sizes step by the smallest one, so every size stays aligned like it.
    p.step_ = p.min_;
    return p;
  }
  if (auto ok = check(job.bs[d], "bs"); !ok) return tl::unexpected(ok.error());
  p.min_ = p.max_ = job.bs[d];
  return p;
}

std::uint32_t BlockSizePicker::pick(Rng& rng) const {
  if (min_ == max_) return min_;
  if (!shares_.empty()) {
    const auto r = static_cast<std::uint32_t>(rng.below(kScale));
    for (const Share& s : shares_)
      if (r < s.cumulative) return s.bytes;
    return shares_.back().bytes;
  }
  const std::uint64_t steps = (max_ - min_) / step_ + 1;
  return min_ + static_cast<std::uint32_t>(rng.below(steps)) * step_;
}

}  // namespace cxlpool::io
