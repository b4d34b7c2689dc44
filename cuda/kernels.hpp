// SPDX-License-Identifier: Apache-2.0
// Launchers for the embedded kernels (kernels/*.cu). Every kernel has a CPU
// reference with the same semantics in reference/. Pointers are device
// addresses (CUdeviceptr as uint64_t): cuMemAlloc memory, a cuMemMap'ed VMM
// range, or cuMemHostRegister'ed host memory. Launches are asynchronous on
// `stream` (a CUstream; nullptr is the legacy default stream) unless noted.
#pragma once

#include <cstdint>

#include "cxlpool/common/result.hpp"
#include "decode_attention_ref.hpp"
#include "device_context.hpp"

namespace cxlpool::cuda {

class Kernels {
 public:
  using Stream = void*;  // CUstream

  // Loads the embedded modules into `ctx`'s context (current on the calling
  // thread). Errors: the cuModuleLoadData failure, e.g. CUDA_ERROR_NO_BINARY_FOR_GPU
  // when no built architecture fits the device and its driver cannot JIT the PTX.
  static Result<Kernels> load(const DeviceContext& ctx);

  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;
  Kernels(Kernels&& other) noexcept;
  Kernels& operator=(Kernels&& other) noexcept;
  ~Kernels();  // unloads the modules; must run before the context goes away

  // ref::kv_gather on the device: dst[i] = arena[page_index[i]] for pages of
  // page_bytes. `page_index` is a device array of n_pages uint32_t. Indices
  // >= arena_pages are skipped and, when `skipped` (a device uint32_t) is
  // not 0, atomically counted into it.
  Result<void> kv_gather(uint64_t dst, uint64_t arena, uint64_t arena_pages, uint64_t page_index,
                         uint32_t n_pages, uint64_t page_bytes, uint64_t skipped = 0,
                         Stream stream = nullptr) const;
  // ref::kv_scatter on the device: arena[page_index[i]] = src[i].
  Result<void> kv_scatter(uint64_t arena, uint64_t src, uint64_t arena_pages, uint64_t page_index,
                          uint32_t n_pages, uint64_t page_bytes, uint64_t skipped = 0,
                          Stream stream = nullptr) const;

  // How a decode-attention launch is cut (the launchers choose; tests and
  // benchmarks print it). Each row's context is cut into slices of
  // split_len tokens, one thread block per (row, KV head, up to 4 of its
  // query heads, slice): a row of max_context tokens uses n_splits slices, a
  // shorter row fewer, so every block but a row's last reads the same number
  // of tokens whatever the rows' lengths. With n_splits > 1 a second kernel
  // combines a row's slices.
  struct AttentionPlan {
    uint32_t n_splits = 1;
    uint32_t split_len = 0;     // tokens per slice, a multiple of 32; 0: each row cut evenly
    uint32_t token_lanes = 32;  // lanes that read one token's head row
    bool vector_loads = false;  // 16-byte loads (head rows and k/v 16-byte aligned)
    uint32_t blocks = 0;        // thread blocks of the main kernel
    bool staged = false;        // the shared-memory staged kernels (set_attention_staged)
  };
  // `max_context`: the most tokens a row can hold (row_stride_tokens, or
  // blocks_per_row * page_tokens). EINVAL for a bad shape.
  // `paged`: the plan of the paged kernels (which may differ in kernel
  // design, see set_attention_staged).
  Result<AttentionPlan> attention_plan(const ref::AttentionShape& shape, uint64_t max_context,
                                       uint64_t k, uint64_t v, bool paged = false) const;
  // How many main-kernel blocks per multiprocessor the split count aims at
  // (default kDefaultBlocksPerSm; 1..kMaxBlocksPerSm): a tuning knob for
  // benchmarks. EINVAL outside that range.
  static constexpr uint32_t kDefaultBlocksPerSm = 8;
  static constexpr uint32_t kMaxBlocksPerSm = 16;
  Result<void> set_attention_blocks_per_sm(uint32_t blocks);
  // true: slices of one length for every row (split_len > 0), a shorter row
  // using fewer; false (default): each row's context cut evenly into
  // n_splits slices (split_len 0). On an H100 neither wins everywhere:
  // equal slices read 6-10 % faster for small bf16 calls (batch 8, context
  // 2048) and 8-10 % slower at batch 8-16, context 4096 (shorter rows leave
  // blocks idle); docs/perf.md, "GPU".
  void set_attention_equal_slices(bool on) { equal_slices_ = on; }
  // true: a split call is one launch, the last block of each row's splits
  // combining their partials; false (default): a second launch of the
  // reduce kernel does it. Measured on an H100 (docs/perf.md, "GPU"): fused
  // saves 2.5-3.6 us on a call that reads nothing, yet reads 0-2 points of
  // copy bandwidth slower on every measured shape (the last block's combine
  // is serial; the reduce launch overlaps the main kernel's tail).
  void set_attention_fused_reduce(bool on) { fused_reduce_ = on; }
  // true (default): 16-lane shapes (16-byte head rows of 65..128 elements)
  // run the shared-memory staged kernels, whose K/V copies reach shared
  // memory through a ring of cp.async stages that stay in flight while the
  // warps compute, except paged f32 caches; false: the register-staged
  // kernels everywhere. The staged kernels always combine splits with a
  // reduce launch. On an H200 (docs/perf.md, "GPU") staged read 6-12 points
  // of copy bandwidth more on every contiguous shape and 6-8 more on paged
  // bf16, but 6-13 fewer on paged f32 (a 512-byte row's 32 chunks each
  // find their page), which keeps the register kernels.
  void set_attention_staged(bool on) { staged_ = on; }
  // true (default where the driver has cuLaunchKernelEx and the GPU is
  // sm_90 or newer): the main and reduce kernels are launched with
  // programmatic stream serialization, so each starts while the kernel
  // before it in the stream drains and waits on the device (not in the
  // launch queue) for its results. false: plain launches.
  void set_attention_overlap(bool on) { overlap_ = on && overlap_supported_; }
  bool attention_overlap_supported() const { return overlap_supported_; }

  // The decode-attention launches of one Kernels object share its split
  // workspace: launches on different streams must not run concurrently
  // (use one Kernels per stream for that). Launches on one stream are
  // ordered and may follow each other freely.
  //
  // ref::decode_attention on the device: `q` and `out` are f32
  // [batch][q_heads][head_dim], `k`/`v` the arena's contiguous
  // [row][token][kv_head][head_dim] tensors (shape.dtype), rows
  // `row_stride_tokens` tokens apart, `seq_lens` a device array of batch
  // uint32_t (each <= row_stride_tokens: not checked on the device). EINVAL
  // for a shape ref::check_shape rejects.
  Result<void> decode_attention(const ref::AttentionShape& shape, uint64_t q, uint64_t k,
                                uint64_t v, uint64_t row_stride_tokens, uint64_t seq_lens,
                                uint64_t out, Stream stream = nullptr) const;

  // ref::decode_attention_paged on the device: `k_pages`/`v_pages` pools of
  // pool_pages pages of page_tokens tokens, `block_table` a device array
  // [batch][blocks_per_row] of uint32_t. Tokens whose page is >= pool_pages
  // are left out of the softmax and, when `skipped` (a device uint32_t) is
  // not 0, counted into it (once per token and query head).
  Result<void> decode_attention_paged(const ref::AttentionShape& shape, uint64_t q,
                                      uint64_t k_pages, uint64_t v_pages, uint64_t pool_pages,
                                      uint32_t page_tokens, uint64_t block_table,
                                      uint32_t blocks_per_row, uint64_t seq_lens, uint64_t out,
                                      uint64_t skipped = 0, Stream stream = nullptr) const;

  // ref::fill_pattern on the device.
  Result<void> fill_pattern(uint64_t dst, uint64_t bytes, uint64_t seed,
                            Stream stream = nullptr) const;

  // ref::checksum of device memory. Synchronous: it waits for the result on
  // the legacy default stream, which orders it after earlier launches there.
  Result<uint64_t> checksum(uint64_t src, uint64_t bytes) const;

 private:
  Kernels() = default;
  void unload();
  Result<void> launch(void* function, uint64_t work_items, uint32_t threads, void** args,
                      Stream stream) const;

  const DriverApi* api_ = nullptr;
  void* kv_module_ = nullptr;         // CUmodule
  void* pattern_module_ = nullptr;    // CUmodule
  void* attention_module_ = nullptr;  // CUmodule
  void* gather_ = nullptr;          // CUfunction
  void* scatter_ = nullptr;
  void* fill_ = nullptr;
  void* checksum_ = nullptr;
  Result<void> launch_attention(void* const (&fns)[2][3], void* const (&staged)[2],
                                const ref::AttentionShape& shape, uint64_t max_context,
                                void* params, Stream stream) const;
  // One decode-attention kernel launch (grid x, y, z of `threads`, with
  // `shared_bytes` of dynamic shared memory),
  // overlapped with the previous kernel of the stream when overlap_.
  Result<void> launch_attention_grid(void* fn, uint32_t x, uint32_t y, uint32_t z,
                                     uint32_t threads, uint32_t shared_bytes, void** args,
                                     Stream stream) const;

  // [f32, bf16][scalar loads, 16-byte loads, 16-byte loads with 16 lanes per token]
  void* attention_[2][3] = {};        // contiguous
  void* attention_paged_[2][3] = {};  // paged
  void* attention_reduce_ = nullptr;
  void* staged_module_ = nullptr;           // CUmodule
  void* attention_staged_[2] = {};        // [f32, bf16], contiguous
  void* attention_paged_staged_[2] = {};  // [f32, bf16], paged
  uint64_t checksum_slot_ = 0;  // device uint64_t the checksum kernel adds into
  uint32_t sm_count_ = 1;
  uint32_t blocks_per_sm_ = kDefaultBlocksPerSm;
  bool equal_slices_ = false;
  bool fused_reduce_ = false;
  bool staged_ = true;
  bool overlap_supported_ = false;
  bool overlap_ = false;
  uint64_t workspace_ = 0;  // split partials: acc floats, then (max, sum) pairs
  uint64_t done_counts_ = 0;  // the fused reduce's per-(row, head chunk) counts, zero at rest
  uint64_t workspace_records_ = 0;
};

}  // namespace cxlpool::cuda
