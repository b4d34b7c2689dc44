// SPDX-License-Identifier: Apache-2.0
// What attention_bench's CPU run (attention_bench.cpp) and its GPU run share.
// The build compiles the GPU run from attention_bench_gpu.cpp where the
// cuda backend is built, from attention_bench_no_gpu.cpp (which says why it
// is skipped) elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench_timing.hpp"
#include "decode_attention_ref.hpp"

namespace cxlpool::attention_bench {

using bench::median;
using bench::now_s;
using cuda::ref::AttentionShape;
using cuda::ref::KvDtype;

struct Options {
  uint32_t batch = 16;
  uint32_t seq = 2048;
  uint32_t q_heads = 32;
  uint32_t kv_heads = 8;
  uint32_t head_dim = 128;
  uint32_t page_tokens = 16;
  uint32_t page_mib = 2;
  KvDtype dtype = KvDtype::kF32;
  int reps = 7;
  uint32_t blocks_per_sm = 8;  // 0: sweep
  bool cpu = true;
  bool gpu = true;
};

struct Workload {
  AttentionShape shape;
  std::vector<uint32_t> lens;
  std::vector<float> q;
  uint32_t blocks_per_row = 0;
  uint64_t pool_pages = 0;
  std::vector<uint32_t> table;
  size_t kv_bytes_read = 0;  // K + V bytes one call reads
};

void fill_random(std::byte* dst, size_t elems, KvDtype dtype, uint32_t seed);
void print_header(const Options& o, const Workload& w, const char* where);
void print_result(const char* where, const std::vector<double>& tc, const std::vector<double>& tp,
                  const Options& o, const Workload& w);

// The kernels on CUDA device 0 against the CPU reference. 0 when they match
// (or when there is no GPU to run on), 1 otherwise.
int run_gpu(const Options& o, const Workload& w);

}  // namespace cxlpool::attention_bench
