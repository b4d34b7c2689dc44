// SPDX-License-Identifier: Apache-2.0
// Decode attention over a contiguous KV arena vs the same computation over a
// paged (block-table) layout, in the same run on the same data.
//
// CPU: the contiguous cache is laid out as the KV arena lays it out: one
// reserved virtual range per tensor (the host GpuVmm backend) with pages of
// --page-mib backed by a memfd in shuffled order, so the tensor is contiguous
// only virtually, as in the arena. The paged twin is a pool of
// --page-tokens-token pages of the same kind of memory (a MAP_SHARED memfd)
// with a shuffled block table. Both run cuda/reference's decode attention;
// the results must be bit-identical. Runs alternate, medians are reported.
//
// GPU (when a CUDA device is usable): the arena tensors are a cuda GpuVmm
// range of 2 MiB device pages, the pool plain device memory; the two kernels
// of kernels/decode_attention.cu are timed the same way, their outputs are
// checked against the CPU reference, and the K+V bytes they read per second
// are set against the device's copy bandwidth measured in the same run (a
// 1 GiB cuMemcpyDtoD, bytes read + written). --blocks-per-sm sets the split
// planner's target (Kernels::set_attention_blocks_per_sm); 0 tries 2, 4, 8
// and 16 and reports each.
//
//   attention_bench [--batch N] [--seq N] [--q-heads N] [--kv-heads N]
//                   [--head-dim N] [--page-tokens N] [--page-mib N]
//                   [--dtype f32|bf16] [--reps N] [--blocks-per-sm N]
//                   [--cpu-only] [--gpu-only]
// Exit: 0, 1 on a mismatch or error, 2 on usage errors.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attention_bench.hpp"
#include "attention_math.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"
#include "decode_attention_ref.hpp"
#include "host_vmm.hpp"

namespace cxlpool::attention_bench {

void fill_random(std::byte* dst, size_t elems, KvDtype dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < elems; ++i) {
    const float f = dist(gen);
    if (dtype == KvDtype::kF32) {
      std::memcpy(dst + 4 * i, &f, 4);
    } else {
      const uint16_t b = cuda::math::f32_to_bf16(f);
      std::memcpy(dst + 2 * i, &b, 2);
    }
  }
}

namespace {

// One arena tensor: a reserved range whose pages come from one memfd in
// shuffled order (the arena hands out pages in whatever order rows free them).
struct ArenaTensor {
  std::unique_ptr<hal::GpuVmm> vmm;
  uint64_t va = 0;
  size_t bytes = 0;
  std::byte* data() const { return reinterpret_cast<std::byte*>(va); }
};

bool make_arena_tensor(size_t bytes, size_t page, uint32_t seed, ArenaTensor& out) {
  out.vmm = drivers::make_host_vmm();
  out.bytes = (bytes + page - 1) / page * page;
  auto va = out.vmm->reserve(out.bytes);
  auto handle = out.vmm->create(out.bytes);
  if (!va || !handle) {
    std::fprintf(stderr, "host vmm: %s\n",
                 (!va ? va.error() : handle.error()).message.c_str());
    return false;
  }
  out.va = *va;
  std::vector<uint64_t> pages(out.bytes / page);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), std::mt19937(seed));
  for (size_t i = 0; i < pages.size(); ++i) {
    if (auto r = out.vmm->map(out.va + i * page, page, *handle, pages[i] * page); !r) {
      std::fprintf(stderr, "host vmm map: %s\n", r.error().message.c_str());
      return false;
    }
  }
  return true;
}

// A paged pool in the same kind of memory (a shared memfd mapping).
struct Pool {
  UniqueFd fd;
  void* addr = MAP_FAILED;
  size_t bytes = 0;
  ~Pool() {
    if (addr != MAP_FAILED) ::munmap(addr, bytes);
  }
  std::byte* data() const { return static_cast<std::byte*>(addr); }
};

bool make_pool(size_t bytes, Pool& out) {
  out.fd.reset(::memfd_create("attention-bench-pool", MFD_CLOEXEC));
  out.bytes = bytes;
  if (!out.fd || ::ftruncate(out.fd.get(), static_cast<off_t>(bytes)) != 0) return false;
  out.addr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, out.fd.get(), 0);
  return out.addr != MAP_FAILED;
}

}  // namespace

Workload make_workload(const Options& o) {
  Workload w;
  w.shape = AttentionShape{o.batch, o.q_heads, o.kv_heads, o.head_dim,
                           1.0f / std::sqrt(float(o.head_dim)), o.dtype};
  // Rows of different lengths, as in a real batch: seq/2 .. seq.
  std::mt19937 gen(5);
  for (uint32_t r = 0; r < o.batch; ++r) w.lens.push_back(o.seq / 2 + gen() % (o.seq / 2 + 1));
  w.q.resize(size_t{o.batch} * o.q_heads * o.head_dim);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (auto& f : w.q) f = dist(gen);
  w.blocks_per_row = (o.seq + o.page_tokens - 1) / o.page_tokens;
  w.pool_pages = uint64_t{o.batch} * w.blocks_per_row;
  w.table.resize(w.pool_pages);
  std::iota(w.table.begin(), w.table.end(), 0u);
  std::shuffle(w.table.begin(), w.table.end(), std::mt19937(9));
  for (const uint32_t l : w.lens) w.kv_bytes_read += 2 * size_t{l} * cuda::ref::token_bytes(w.shape);
  return w;
}

void print_header(const Options& o, const Workload& w, const char* where) {
  uint64_t tokens = 0;
  for (const uint32_t l : w.lens) tokens += l;
  std::printf("decode attention, %s: batch %u, %u q heads / %u kv heads, head_dim %u, %s, "
              "context %u (%lu tokens cached, %.1f MiB of K+V read per call)\n",
              where, o.batch, o.q_heads, o.kv_heads, o.head_dim,
              o.dtype == KvDtype::kF32 ? "f32" : "bf16", o.seq,
              static_cast<unsigned long>(tokens), double(w.kv_bytes_read) / (1 << 20));
}

namespace {

// Median of the per-run ratios: on a shared machine a slow moment hits
// both layouts of one run alike, so pairing cancels most of it.
double paired_ratio(const std::vector<double>& contiguous, const std::vector<double>& paged) {
  std::vector<double> r;
  for (size_t i = 0; i < contiguous.size(); ++i) r.push_back(paged[i] / contiguous[i]);
  return median(r);
}

}  // namespace

void print_result(const char* where, const std::vector<double>& tc, const std::vector<double>& tp,
                  const Options& o, const Workload& w) {
  const double contiguous_s = median(tc), paged_s = median(tp);
  const double gbs_c = double(w.kv_bytes_read) / contiguous_s / 1e9;
  const double gbs_p = double(w.kv_bytes_read) / paged_s / 1e9;
  std::printf("  contiguous (arena, %u MiB pages): %9.3f ms  %7.2f GB/s\n",
              where[0] == 'G' ? 2u : o.page_mib, contiguous_s * 1e3, gbs_c);
  std::printf("  paged (%u-token blocks):          %9.3f ms  %7.2f GB/s\n", o.page_tokens,
              paged_s * 1e3, gbs_p);
  std::printf("  %s contiguous / paged throughput: %.3fx (median of per-run ratios; "
              "ratio of medians %.3fx)\n",
              where, paired_ratio(tc, tp), paged_s / contiguous_s);
}

namespace {

int run_cpu(const Options& o, const Workload& w) {
  const size_t tb = cuda::ref::token_bytes(w.shape);
  const size_t tensor = size_t{o.batch} * o.seq * tb;
  const size_t page = size_t{o.page_mib} << 20;
  ArenaTensor k, v;
  if (!make_arena_tensor(tensor, page, 1, k) || !make_arena_tensor(tensor, page, 2, v)) return 1;
  const size_t elem = cuda::ref::dtype_bytes(o.dtype);
  fill_random(k.data(), tensor / elem, o.dtype, 11);
  fill_random(v.data(), tensor / elem, o.dtype, 12);
  const size_t pool_bytes = w.pool_pages * o.page_tokens * tb;
  Pool kp, vp;
  if (!make_pool(pool_bytes, kp) || !make_pool(pool_bytes, vp)) {
    std::perror("pool");
    return 1;
  }
  if (cuda::ref::copy_to_pages(w.shape, k.data(), o.seq, w.lens.data(), kp.data(), w.pool_pages,
                               o.page_tokens, w.table.data(), w.blocks_per_row) != 0 ||
      cuda::ref::copy_to_pages(w.shape, v.data(), o.seq, w.lens.data(), vp.data(), w.pool_pages,
                               o.page_tokens, w.table.data(), w.blocks_per_row) != 0) {
    std::fprintf(stderr, "copy_to_pages failed\n");
    return 1;
  }
  const cuda::ref::ContiguousKv ckv{k.data(), v.data(), o.seq};
  const cuda::ref::PagedKv pkv{kp.data(), vp.data(), w.pool_pages, o.page_tokens,
                               w.table.data(), w.blocks_per_row};
  std::vector<float> out_c(w.q.size()), out_p(w.q.size());
  std::vector<double> tc, tp;
  print_header(o, w, "CPU, 1 thread");
  auto contiguous = [&] {
    const double t0 = now_s();
    const int r = cuda::ref::decode_attention(w.shape, w.q.data(), ckv, w.lens.data(),
                                              out_c.data());
    return r == 0 ? now_s() - t0 : -1.0;
  };
  auto paged = [&] {
    const double t0 = now_s();
    const int r = cuda::ref::decode_attention_paged(w.shape, w.q.data(), pkv, w.lens.data(),
                                                    out_p.data());
    return r == 0 ? now_s() - t0 : -1.0;
  };
  // One untimed call each warms caches and page tables; then the order
  // alternates so neither layout always runs second.
  for (int rep = -1; rep < o.reps; ++rep) {
    double c = 0, p = 0;
    if (rep % 2 == 0) {
      c = contiguous();
      p = paged();
    } else {
      p = paged();
      c = contiguous();
    }
    if (c < 0 || p < 0) return 1;
    if (rep >= 0) {
      tc.push_back(c);
      tp.push_back(p);
    }
  }
  if (std::memcmp(out_c.data(), out_p.data(), out_c.size() * sizeof(float)) != 0) {
    std::fprintf(stderr, "MISMATCH: contiguous and paged results differ\n");
    return 1;
  }
  print_result("CPU", tc, tp, o, w);
  std::printf("  results bit-identical: yes (%d runs each, medians)\n", o.reps);
  return 0;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](uint32_t& v) {
      if (i + 1 >= argc) return false;
      v = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
      return v > 0;
    };
    uint32_t reps = 0;
    if (a == "--batch" ? next(o.batch)
        : a == "--seq"         ? next(o.seq)
        : a == "--q-heads"     ? next(o.q_heads)
        : a == "--kv-heads"    ? next(o.kv_heads)
        : a == "--head-dim"    ? next(o.head_dim)
        : a == "--page-tokens" ? next(o.page_tokens)
        : a == "--page-mib"    ? next(o.page_mib)
        : a == "--reps"        ? (next(reps) && (o.reps = int(reps), true))
        : a == "--blocks-per-sm" ? (i + 1 < argc &&
                                    (o.blocks_per_sm = uint32_t(std::strtoul(argv[++i], nullptr, 10)),
                                     o.blocks_per_sm <= 16))
                               : false) {
      continue;
    }
    if (a == "--dtype" && i + 1 < argc) {
      const std::string d = argv[++i];
      if (d != "f32" && d != "bf16") return false;
      o.dtype = d == "f32" ? KvDtype::kF32 : KvDtype::kBf16;
    } else if (a == "--cpu-only") {
      o.gpu = false;
    } else if (a == "--gpu-only") {
      o.cpu = false;
    } else {
      return false;
    }
  }
  return o.seq >= 2 && o.q_heads % o.kv_heads == 0 && o.head_dim <= cuda::ref::kMaxHeadDim;
}

}  // namespace
}  // namespace cxlpool::attention_bench

int main(int argc, char** argv) {
  using namespace cxlpool::attention_bench;
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: attention_bench [--batch N] [--seq N] [--q-heads N] [--kv-heads N] "
                 "[--head-dim N<=256] [--page-tokens N] [--page-mib N] [--dtype f32|bf16] "
                 "[--reps N] [--blocks-per-sm N<=16, 0 sweeps] [--cpu-only] [--gpu-only]\n");
    return 2;
  }
  const Workload w = make_workload(o);
  int status = 0;
  if (o.cpu) status |= run_cpu(o, w);
  if (o.gpu) status |= run_gpu(o, w);
  return status;
}
