// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/weights/placement.hpp"

#include <algorithm>
#include <numeric>

namespace cxlpool::weights {
namespace {

constexpr int kSimulatedPasses = 4;  // the last one is steady state
// A smaller window within this fraction of the best pass time wins: slots
// cost memory and a deeper window buys nothing measurable.
constexpr double kDepthTolerance = 0.01;

double compute_of(const PlacementInput& in, size_t layer) {
  return in.compute_ns.empty() ? 0.0 : in.compute_ns[layer];
}

}  // namespace

double layer_load_ns(const PlacementInput& in, size_t layer) {
  bool file = !in.layer_source.empty() && in.layer_source[layer] == LayerSource::kFile;
  double bw = file ? in.file_bytes_per_sec : in.region_bytes_per_sec;
  return static_cast<double>(in.layer_bytes[layer]) * 1e9 / bw;
}

double simulate_pass_ns(const PlacementInput& in, const std::vector<bool>& pinned, uint32_t depth) {
  const size_t n = in.layer_bytes.size();
  if (n == 0) return 0;
  const size_t slots = depth + 1;
  const size_t steps = n * kSimulatedPasses;
  std::vector<double> start(steps, 0), end(steps, 0);
  // Step index of each streamed layer, in stream order: a slot frees when the
  // layer `slots` streams earlier ends.
  std::vector<size_t> stream_step;  // step index of each streamed layer
  double copy_free = 0;
  double prev_end = 0;
  for (size_t s = 0; s < steps; ++s) {
    size_t layer = s % n;
    double ready = 0;
    if (!pinned[layer]) {
      // Requested when the layer `depth` steps earlier was acquired (or at
      // time 0 for the first layers of the first pass).
      double trigger = s >= depth ? start[s - depth] : 0;
      size_t k = stream_step.size();
      double slot_free = k >= slots ? end[stream_step[k - slots]] : 0;
      double load_start = std::max({copy_free, trigger, slot_free});
      ready = load_start + layer_load_ns(in, layer);
      copy_free = ready;
      stream_step.push_back(s);
    }
    start[s] = std::max(prev_end, ready);
    end[s] = start[s] + compute_of(in, layer);
    prev_end = end[s];
  }
  double pass_begin = steps > n ? end[steps - n - 1] : 0;
  return end[steps - 1] - pass_begin;
}

Result<PlacementPlan> plan_placement(const PlacementInput& in) {
  const size_t n = in.layer_bytes.size();
  if (!in.layer_source.empty() && in.layer_source.size() != n) {
    return fail(EINVAL, "layer_source size differs from layer_bytes");
  }
  if (!in.compute_ns.empty() && in.compute_ns.size() != n) {
    return fail(EINVAL, "compute_ns size differs from layer_bytes");
  }
  if (in.max_buffers < 2 || in.max_buffers > 8) return fail(EINVAL, "max_buffers must be 2..8");
  if (!(in.region_bytes_per_sec > 0)) return fail(EINVAL, "region bandwidth must be positive");
  bool any_file = std::any_of(in.layer_source.begin(), in.layer_source.end(),
                              [](LayerSource s) { return s == LayerSource::kFile; });
  if (any_file && !(in.file_bytes_per_sec > 0)) return fail(EINVAL, "file bandwidth must be positive");
  for (double c : in.compute_ns) {
    if (!(c >= 0)) return fail(EINVAL, "compute time must be non-negative");
  }

  PlacementPlan plan;
  plan.pinned.assign(n, false);
  // Pin the layers whose copy costs most per byte kept (file layers before
  // region layers), the larger first within a source, while the budget
  // lasts; smaller layers fill what is left.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  auto source_bw = [&](size_t layer) {
    bool file = !in.layer_source.empty() && in.layer_source[layer] == LayerSource::kFile;
    return file ? in.file_bytes_per_sec : in.region_bytes_per_sec;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (source_bw(a) != source_bw(b)) return source_bw(a) < source_bw(b);
    return in.layer_bytes[a] > in.layer_bytes[b];
  });
  for (size_t layer : order) {
    uint64_t b = in.layer_bytes[layer];
    if (plan.pinned_bytes + b <= in.pinned_budget_bytes && in.pinned_budget_bytes > 0) {
      plan.pinned[layer] = true;
      plan.pinned_bytes += b;
    }
  }

  for (size_t i = 0; i < n; ++i) {
    plan.compute_ns_per_pass += compute_of(in, i);
    if (!plan.pinned[i]) plan.load_ns_per_pass += layer_load_ns(in, i);
  }
  plan.copy_bound = plan.load_ns_per_pass > plan.compute_ns_per_pass;

  std::vector<double> pass(in.max_buffers, 0);
  double best = 0;
  for (uint32_t d = 1; d < in.max_buffers; ++d) {
    pass[d] = simulate_pass_ns(in, plan.pinned, d);
    if (d == 1 || pass[d] < best) best = pass[d];
  }
  plan.prefetch_depth = in.max_buffers - 1;
  for (uint32_t d = 1; d < in.max_buffers; ++d) {
    if (pass[d] <= best * (1 + kDepthTolerance)) {
      plan.prefetch_depth = d;
      break;
    }
  }
  plan.buffers = plan.prefetch_depth + 1;
  plan.pass_ns = pass[plan.prefetch_depth];
  plan.stall_ns_per_pass = std::max(0.0, plan.pass_ns - plan.compute_ns_per_pass);
  return plan;
}

}  // namespace cxlpool::weights
