// SPDX-License-Identifier: Apache-2.0
// attention_bench's GPU run: the arena tensors are a cuda GpuVmm range of
// 2 MiB device pages, the pool plain device memory (see attention_bench.cpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "attention_bench.hpp"
#include "cuda_vmm.hpp"
#include "device_context.hpp"
#include "kernels.hpp"

namespace cxlpool::attention_bench {
namespace {

// The device's copy bandwidth: a 1 GiB device-to-device copy, bytes read
// plus bytes written per second, median of 10 after a warm-up. -1 on error.
double measure_copy_gbs(const cuda::DeviceContext& ctx) {
  const size_t bytes = size_t{1} << 30;
  auto src = cuda::DeviceBuffer::allocate(ctx, bytes);
  auto dst = cuda::DeviceBuffer::allocate(ctx, bytes);
  if (!src || !dst) {
    std::fprintf(stderr, "GPU: no room for the copy measurement\n");
    return -1;
  }
  std::vector<double> t;
  for (int rep = -1; rep < 10; ++rep) {
    const double t0 = now_s();
    if (!ctx.copy_on_device(dst->ptr(), src->ptr(), bytes) || !ctx.synchronize()) {
      std::fprintf(stderr, "GPU: device copy failed\n");
      return -1;
    }
    if (rep >= 0) t.push_back(now_s() - t0);
  }
  return 2.0 * double(bytes) / median(t) / 1e9;
}

// The cost of a call that reads nothing (every row empty) at the default
// launch settings, fused and with a reduce launch: what a call pays before
// its first K/V byte, which bounds the fraction of copy bandwidth a small
// call can reach.
int print_fixed_cost(const cuda::DeviceContext& ctx, cuda::Kernels& kernels,
                     const Options& o, const Workload& w, const uint64_t (&base)[2], int inner) {
  const std::vector<uint32_t> zeros(w.lens.size(), 0);
  auto dzero = cuda::DeviceBuffer::allocate(ctx, zeros.size() * sizeof(uint32_t));
  auto dq = cuda::DeviceBuffer::allocate(ctx, w.q.size() * sizeof(float));
  auto dout = cuda::DeviceBuffer::allocate(ctx, w.q.size() * sizeof(float));
  if (!dzero || !dq || !dout ||
      !ctx.copy_to_device(dzero->ptr(), zeros.data(), zeros.size() * sizeof(uint32_t))) {
    std::fprintf(stderr, "GPU: out of device memory\n");
    return 1;
  }
  // [overlapped launches][fused]
  double us[2][2] = {};
  for (const bool overlap : {false, true}) {
    kernels.set_attention_overlap(overlap);
    for (const bool fused : {true, false}) {
      kernels.set_attention_fused_reduce(fused);
      std::vector<double> t;
      for (int rep = -1; rep < o.reps; ++rep) {
        const double t0 = now_s();
        for (int i = 0; i < inner; ++i) {
          if (!kernels.decode_attention(w.shape, dq->ptr(), base[0], base[1], o.seq, dzero->ptr(),
                                        dout->ptr())) {
            return 1;
          }
        }
        if (!ctx.synchronize()) return 1;
        if (rep >= 0) t.push_back((now_s() - t0) / inner);
      }
      us[overlap ? 1 : 0][fused ? 1 : 0] = median(t) * 1e6;
    }
  }
  kernels.set_attention_fused_reduce(false);
  kernels.set_attention_overlap(true);
  std::printf("  fixed cost of a call (every row empty, contiguous, default launch): plain launches: "
              "fused %.1f us, with a reduce launch %.1f us; overlapped launches: fused %.1f us, "
              "with a reduce launch %.1f us%s\n",
              us[0][1], us[0][0], us[1][1], us[1][0],
              kernels.attention_overlap_supported() ? "" : " (overlap not available: plain)");
  return 0;
}

}  // namespace

int run_gpu(const Options& o, const Workload& w) {
  auto ctx = cuda::DeviceContext::open(0);
  if (!ctx) {
    std::printf("decode attention, GPU: skipped (%s)\n", ctx.error().message.c_str());
    return std::getenv("CXLPOOL_REQUIRE_GPU") != nullptr ? 1 : 0;
  }
  auto kernels = cuda::Kernels::load(*ctx);
  auto vmm = cuda::make_cuda_vmm(0);
  if (!kernels || !vmm) {
    std::fprintf(stderr, "GPU: %s\n",
                 (!kernels ? kernels.error() : vmm.error()).message.c_str());
    return 1;
  }
  if (auto r = ctx->make_current(); !r) return 1;
  const size_t tb = cuda::ref::token_bytes(w.shape);
  const size_t gran = (*vmm)->granularity();
  const size_t tensor = (size_t{o.batch} * o.seq * tb + gran - 1) / gran * gran;
  // Arena tensors: one reservation each, one device allocation per page.
  uint64_t base[2] = {};
  for (uint64_t& b : base) {
    auto va = (*vmm)->reserve(tensor);
    if (!va) {
      std::fprintf(stderr, "GPU reserve: %s\n", va.error().message.c_str());
      return 1;
    }
    b = *va;
    for (size_t off = 0; off < tensor; off += gran) {
      auto h = (*vmm)->create(gran);
      if (!h || !(*vmm)->map(b + off, gran, *h, 0) || !(*vmm)->release(*h)) {
        std::fprintf(stderr, "GPU map failed\n");
        return 1;
      }
    }
  }
  const size_t elem = cuda::ref::dtype_bytes(o.dtype);
  const size_t pool_bytes = w.pool_pages * o.page_tokens * tb;
  std::vector<std::byte> pages(pool_bytes);
  auto kp = cuda::DeviceBuffer::allocate(*ctx, pool_bytes);
  auto vp = cuda::DeviceBuffer::allocate(*ctx, pool_bytes);
  auto dq = cuda::DeviceBuffer::allocate(*ctx, w.q.size() * sizeof(float));
  auto dlens = cuda::DeviceBuffer::allocate(*ctx, w.lens.size() * sizeof(uint32_t));
  auto dtable = cuda::DeviceBuffer::allocate(*ctx, w.table.size() * sizeof(uint32_t));
  auto dout_c = cuda::DeviceBuffer::allocate(*ctx, w.q.size() * sizeof(float));
  auto dout_p = cuda::DeviceBuffer::allocate(*ctx, w.q.size() * sizeof(float));
  if (!kp || !vp || !dq || !dlens || !dtable || !dout_c || !dout_p) {
    std::fprintf(stderr, "GPU: out of device memory\n");
    return 1;
  }
  const cuda::DeviceBuffer* pool[2] = {&*kp, &*vp};
  std::vector<std::byte> host_kv[2];
  for (int i = 0; i < 2; ++i) {
    std::vector<std::byte>& host = host_kv[i];
    host.resize(size_t{o.batch} * o.seq * tb);
    fill_random(host.data(), host.size() / elem, o.dtype, 11 + i);
    cuda::ref::copy_to_pages(w.shape, host.data(), o.seq, w.lens.data(), pages.data(),
                             w.pool_pages, o.page_tokens, w.table.data(), w.blocks_per_row);
    if (!ctx->copy_to_device(base[i], host.data(), host.size()) ||
        !ctx->copy_to_device(pool[i]->ptr(), pages.data(), pages.size())) {
      return 1;
    }
  }
  if (!ctx->copy_to_device(dq->ptr(), w.q.data(), w.q.size() * sizeof(float)) ||
      !ctx->copy_to_device(dlens->ptr(), w.lens.data(), w.lens.size() * sizeof(uint32_t)) ||
      !ctx->copy_to_device(dtable->ptr(), w.table.data(), w.table.size() * sizeof(uint32_t))) {
    return 1;
  }
  // The CPU reference over the same data (the host copies of K and V).
  std::vector<float> want(w.q.size());
  if (cuda::ref::decode_attention(w.shape, w.q.data(),
                                  cuda::ref::ContiguousKv{host_kv[0].data(), host_kv[1].data(), o.seq},
                                  w.lens.data(), want.data()) != 0) {
    std::fprintf(stderr, "reference failed\n");
    return 1;
  }
  const double copy_gbs = measure_copy_gbs(*ctx);
  if (copy_gbs <= 0) return 1;
  print_header(o, w, "GPU");
  std::printf("  device copy bandwidth (cuMemcpyDtoD of 1 GiB, read + written, median of 10): "
              "%.1f GB/s\n", copy_gbs);
  std::vector<uint32_t> targets;
  if (o.blocks_per_sm == 0) {
    targets = {1, 2, 4, 8, 16};
  } else {
    targets = {o.blocks_per_sm};
  }
  const int inner = 20;  // launches per timed sample: a decode call is short
  if (print_fixed_cost(*ctx, *kernels, o, w, base, inner) != 0) return 1;
  int status = 0;
  // Each target in several designs measured against each other in this
  // run: slices of one length (the planner) or each row cut evenly (the
  // previous planner); the register-staged or the shared-memory staged
  // kernels; plain launches or launches that overlap the previous kernel's
  // drain (programmatic dependent launch, sm_90+); the partials combined by
  // a reduce launch or, for the register kernels, by each row's last block.
  struct Run {
    uint32_t target;
    bool equal;
    bool fused;
    bool staged;
    bool overlap;
  };
  const bool can_overlap = kernels->attention_overlap_supported();
  std::vector<Run> runs;
  for (const uint32_t target : targets) {
    for (const bool equal : {true, false}) {
      for (const bool staged : {false, true}) {
        for (const bool overlap : {false, true}) {
          if (overlap && !can_overlap) continue;
          runs.push_back({target, equal, false, staged, overlap});
        }
      }
      runs.push_back({target, equal, true, false, can_overlap});
    }
  }
  if (!can_overlap) {
    std::printf("  overlapped launches: not available (needs sm_90 and cuLaunchKernelEx)\n");
  }
  for (const auto& [target, equal, fused, staged, overlap] : runs) {
    if (!kernels->set_attention_blocks_per_sm(target)) return 1;
    kernels->set_attention_equal_slices(equal);
    kernels->set_attention_fused_reduce(fused);
    kernels->set_attention_staged(staged);
    kernels->set_attention_overlap(overlap);
    auto plan_c = kernels->attention_plan(w.shape, o.seq, base[0], base[1]);
    auto plan_p = kernels->attention_plan(w.shape, uint64_t{w.blocks_per_row} * o.page_tokens,
                                          kp->ptr(), vp->ptr(), /*paged=*/true);
    if (!plan_c || !plan_p) return 1;
    std::printf("  launch: %u blocks/SM target, %s, %s, %s kernels (paged: %s), %s: contiguous "
                "%u splits of %u tokens x %u blocks, paged %u splits of %u tokens, %u lanes per "
                "token, %s loads\n",
                target, equal ? "slices of one length" : "rows cut evenly (previous planner)",
                fused ? "fused reduce" : "reduce launch",
                plan_c->staged ? "shared-memory staged" : "register-staged",
                plan_p->staged ? "shared-memory staged" : "register-staged",
                overlap ? "overlapped launches" : "plain launches", plan_c->n_splits,
                plan_c->split_len,
                plan_c->blocks, plan_p->n_splits, plan_p->split_len, plan_c->token_lanes,
                plan_c->vector_loads ? "16-byte" : "scalar");
    std::vector<double> tc, tp;
    for (int rep = -1; rep < o.reps; ++rep) {
      double t0 = now_s();
      for (int i = 0; i < inner; ++i) {
        if (!kernels->decode_attention(w.shape, dq->ptr(), base[0], base[1], o.seq, dlens->ptr(),
                                       dout_c->ptr())) {
          return 1;
        }
      }
      if (!ctx->synchronize()) return 1;
      double t1 = now_s();
      for (int i = 0; i < inner; ++i) {
        if (!kernels->decode_attention_paged(w.shape, dq->ptr(), kp->ptr(), vp->ptr(),
                                             w.pool_pages, o.page_tokens, dtable->ptr(),
                                             w.blocks_per_row, dlens->ptr(), dout_p->ptr())) {
          return 1;
        }
      }
      if (!ctx->synchronize()) return 1;
      double t2 = now_s();
      if (rep >= 0) {
        tc.push_back((t1 - t0) / inner);
        tp.push_back((t2 - t1) / inner);
      }
    }
    std::vector<float> a(w.q.size()), b(w.q.size());
    if (!ctx->copy_to_host(a.data(), dout_c->ptr(), a.size() * sizeof(float)) ||
        !ctx->copy_to_host(b.data(), dout_p->ptr(), b.size() * sizeof(float))) {
      return 1;
    }
    float worst = 0, worst_ref = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::fabs(a[i] - b[i]));
      const float tol = 1.0f + std::fabs(want[i]);
      worst_ref = std::max({worst_ref, std::fabs(a[i] - want[i]) / tol,
                            std::fabs(b[i] - want[i]) / tol});
      if (std::isnan(a[i]) || std::isnan(b[i])) worst_ref = INFINITY;
    }
    print_result("GPU", tc, tp, o, w);
    const double gbs_c = double(w.kv_bytes_read) / median(tc) / 1e9;
    const double gbs_p = double(w.kv_bytes_read) / median(tp) / 1e9;
    std::printf("  fraction of the copy bandwidth: contiguous %.0f%%, paged %.0f%%\n",
                100.0 * gbs_c / copy_gbs, 100.0 * gbs_p / copy_gbs);
    std::printf("  contiguous vs paged max |difference|: %g; vs CPU reference max "
                "|difference|/(1+|ref|): %g\n",
                double(worst), double(worst_ref));
    if (!(worst <= 1e-4f) || !(worst_ref <= 1e-4f)) status = 1;
  }
  kernels->set_attention_fused_reduce(false);
  kernels->set_attention_staged(true);
  kernels->set_attention_overlap(true);
  for (const uint64_t range : base) (void)(*vmm)->release_range(range, tensor);
  return status;
}

}  // namespace cxlpool::attention_bench
