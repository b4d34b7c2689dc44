// SPDX-License-Identifier: Apache-2.0
#include "placement_parsers.hpp"

#include <algorithm>
#include <string>

#include "value_parsers.hpp"

namespace cxlpool::io {
namespace {

Result<int> index_at_most(std::string_view text, int max_index) {
  auto n = parse_uint(trim(text));
  if (!n) return tl::unexpected(n.error());
  if (*n > static_cast<std::uint64_t>(max_index))
    return fail(EINVAL, std::to_string(*n) + " is above " + std::to_string(max_index));
  return static_cast<int>(*n);
}

}  // namespace

Result<std::vector<int>> parse_index_list(std::string_view text, int max_index) {
  text = trim(text);
  if (text.empty()) return fail(EINVAL, "needs a list such as 0-3,6");
  std::vector<int> out;
  for (std::string_view part : split(text, ',')) {
    part = trim(part);
    const auto dash = part.find('-');
    auto lo = index_at_most(part.substr(0, dash), max_index);
    if (!lo) return tl::unexpected(lo.error());
    int hi = *lo;
    if (dash != std::string_view::npos) {
      auto h = index_at_most(part.substr(dash + 1), max_index);
      if (!h) return tl::unexpected(h.error());
      if (*h < *lo) return fail(EINVAL, "range '" + std::string(part) + "' ends before it starts");
      hi = *h;
    }
    for (int i = *lo; i <= hi; ++i) out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<NumaMemPolicy> parse_mem_policy(std::string_view text) {
  text = trim(text);
  const auto colon = text.find(':');
  const std::string_view mode = trim(text.substr(0, colon));
  NumaMemPolicy policy;
  if (mode == "default" || mode == "local") {
    if (colon != std::string_view::npos) return fail(EINVAL, "'" + std::string(mode) + "' takes no node list");
    policy.mode = mode == "default" ? MemPolicy::kDefault : MemPolicy::kLocal;
    return policy;
  }
  if (mode == "prefer") {
    policy.mode = MemPolicy::kPrefer;
  } else if (mode == "bind") {
    policy.mode = MemPolicy::kBind;
  } else if (mode == "interleave") {
    policy.mode = MemPolicy::kInterleave;
  } else {
    return fail(EINVAL, "'" + std::string(mode) + "' is not default, prefer, bind, interleave or local");
  }
  if (colon == std::string_view::npos) return fail(EINVAL, "'" + std::string(mode) + "' needs nodes (" + std::string(mode) + ":0)");
  auto nodes = parse_index_list(text.substr(colon + 1), kMaxCpuIndex);
  if (!nodes) return tl::unexpected(nodes.error());
  if (policy.mode == MemPolicy::kPrefer && nodes->size() != 1) return fail(EINVAL, "'prefer' takes one node");
  policy.nodes = std::move(*nodes);
  return policy;
}

}  // namespace cxlpool::io
