// SPDX-License-Identifier: Apache-2.0
#include "kernels.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "decode_attention_params.hpp"
#include "driver_api.hpp"
#include "kernel_images.hpp"

namespace cxlpool::cuda {
namespace {

// Enough blocks to fill any current GPU several times over; the kernels
// grid-stride past this.
constexpr uint64_t kMaxBlocks = 65535;
constexpr uint32_t kCopyThreads = 256;
constexpr uint32_t kPatternThreads = 256;

Result<CUmodule> load_module(const DriverApi& api, std::string_view name) {
  for (const KernelImage& image : kernel_images()) {
    if (image.name != name) continue;
    CUmodule module = nullptr;
    if (const CUresult r = api.module_load_data(&module, image.data); r != CUDA_SUCCESS) {
      Error e = cu_error(api, "cuModuleLoadData", r);
      e.message = "kernel module " + std::string(name) + ": " + e.message;
      return tl::unexpected(std::move(e));
    }
    return module;
  }
  return fail(ENOENT, "kernel module " + std::string(name) + " is not embedded in this build");
}

Result<void*> function(const DriverApi& api, void* module, const char* name) {
  CUfunction fn = nullptr;
  if (const CUresult r = api.module_get_function(&fn, static_cast<CUmodule>(module), name);
      r != CUDA_SUCCESS) {
    Error e = cu_error(api, "cuModuleGetFunction", r);
    e.message += std::string(" for ") + name;
    return tl::unexpected(std::move(e));
  }
  return static_cast<void*>(fn);
}

}  // namespace

Result<Kernels> Kernels::load(const DeviceContext& ctx) {
  Kernels k;
  k.api_ = &ctx.api();
  auto kv = load_module(*k.api_, "kv_copy");
  if (!kv) return tl::unexpected(kv.error());
  k.kv_module_ = *kv;
  auto pattern = load_module(*k.api_, "pattern");
  if (!pattern) return tl::unexpected(pattern.error());
  k.pattern_module_ = *pattern;
  auto attention = load_module(*k.api_, "decode_attention");
  if (!attention) return tl::unexpected(attention.error());
  k.attention_module_ = *attention;

  const std::pair<void**, std::pair<void*, const char*>> wanted[] = {
      {&k.gather_, {k.kv_module_, "cxlpool_kv_gather"}},
      {&k.scatter_, {k.kv_module_, "cxlpool_kv_scatter"}},
      {&k.fill_, {k.pattern_module_, "cxlpool_fill_pattern"}},
      {&k.checksum_, {k.pattern_module_, "cxlpool_checksum"}},
      {&k.attention_reduce_, {k.attention_module_, "cxlpool_decode_attention_reduce"}},
  };
  for (const auto& [slot, where] : wanted) {
    auto fn = function(*k.api_, where.first, where.second);
    if (!fn) return tl::unexpected(fn.error());
    *slot = *fn;
  }
  // cxlpool_decode_attention[_paged]_{f32,bf16}{,_vec,_vec16}
  const char* const dtypes[2] = {"f32", "bf16"};
  const char* const variants[3] = {"", "_vec", "_vec16"};
  for (int d = 0; d < 2; ++d) {
    for (int v = 0; v < 3; ++v) {
      for (const bool paged : {false, true}) {
        const std::string name = std::string("cxlpool_decode_attention") + (paged ? "_paged_" : "_") +
                                 dtypes[d] + variants[v];
        auto fn = function(*k.api_, k.attention_module_, name.c_str());
        if (!fn) return tl::unexpected(fn.error());
        (paged ? k.attention_paged_ : k.attention_)[d][v] = *fn;
      }
    }
  }
  auto staged = load_module(*k.api_, "decode_attention_staged");
  if (!staged) return tl::unexpected(staged.error());
  k.staged_module_ = *staged;
  for (int d = 0; d < 2; ++d) {
    for (const bool paged : {false, true}) {
      const std::string name = std::string("cxlpool_decode_attention") +
                               (paged ? "_paged_staged_" : "_staged_") + dtypes[d];
      auto fn = function(*k.api_, k.staged_module_, name.c_str());
      if (!fn) return tl::unexpected(fn.error());
      // Their stages are dynamic shared memory past the 48 KiB a launch
      // gets without asking.
      CXLPOOL_CU_TRY(*k.api_, func_set_attribute, static_cast<CUfunction>(*fn),
                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                     static_cast<int>(kAttentionStagedSharedBytes));
      (paged ? k.attention_paged_staged_ : k.attention_staged_)[d] = *fn;
    }
  }
  int major = 0;
  k.overlap_supported_ =
      k.api_->launch_kernel_ex != nullptr &&
      k.api_->device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                   ctx.device()) == CUDA_SUCCESS &&
      major >= 9;
  k.overlap_ = k.overlap_supported_;
  auto slot = ctx.alloc(sizeof(uint64_t));
  if (!slot) return tl::unexpected(slot.error());
  k.checksum_slot_ = *slot;
  int sms = 0;
  if (k.api_->device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ctx.device()) ==
          CUDA_SUCCESS &&
      sms > 0) {
    k.sm_count_ = static_cast<uint32_t>(sms);
  }
  // The split planner keeps (blocks per launch) below twice its target, and
  // each block writes at most kAttentionHeadsPerBlock records: a workspace
  // for the largest target serves every shape.
  k.workspace_records_ =
      2ull * k.sm_count_ * kMaxBlocksPerSm * kAttentionHeadsPerBlock + kAttentionHeadsPerBlock;
  auto ws = ctx.alloc(k.workspace_records_ * (ref::kMaxHeadDim + 2) * sizeof(float));
  if (!ws) return tl::unexpected(ws.error());
  k.workspace_ = *ws;
  // A split launch has at most workspace_records_ (row, head chunk) pairs:
  // each writes at least one record. The counts start at zero and every
  // launch leaves them there.
  const std::vector<uint32_t> zeros(k.workspace_records_, 0);
  auto counts = ctx.alloc(zeros.size() * sizeof(uint32_t));
  if (!counts) return tl::unexpected(counts.error());
  k.done_counts_ = *counts;
  if (auto r = ctx.copy_to_device(k.done_counts_, zeros.data(), zeros.size() * sizeof(uint32_t)); !r) {
    return tl::unexpected(r.error());
  }
  return k;
}

Kernels::Kernels(Kernels&& other) noexcept { *this = std::move(other); }

Kernels& Kernels::operator=(Kernels&& other) noexcept {
  if (this != &other) {
    unload();
    api_ = std::exchange(other.api_, nullptr);
    kv_module_ = std::exchange(other.kv_module_, nullptr);
    pattern_module_ = std::exchange(other.pattern_module_, nullptr);
    attention_module_ = std::exchange(other.attention_module_, nullptr);
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        attention_[i][j] = std::exchange(other.attention_[i][j], nullptr);
        attention_paged_[i][j] = std::exchange(other.attention_paged_[i][j], nullptr);
      }
    }
    attention_reduce_ = std::exchange(other.attention_reduce_, nullptr);
    staged_module_ = std::exchange(other.staged_module_, nullptr);
    for (int i = 0; i < 2; ++i) {
      attention_staged_[i] = std::exchange(other.attention_staged_[i], nullptr);
      attention_paged_staged_[i] = std::exchange(other.attention_paged_staged_[i], nullptr);
    }
    staged_ = other.staged_;
    overlap_supported_ = other.overlap_supported_;
    overlap_ = other.overlap_;
    sm_count_ = other.sm_count_;
    blocks_per_sm_ = other.blocks_per_sm_;
    equal_slices_ = other.equal_slices_;
    fused_reduce_ = other.fused_reduce_;
    workspace_ = std::exchange(other.workspace_, 0);
    done_counts_ = std::exchange(other.done_counts_, 0);
    workspace_records_ = std::exchange(other.workspace_records_, 0);
    gather_ = std::exchange(other.gather_, nullptr);
    scatter_ = std::exchange(other.scatter_, nullptr);
    fill_ = std::exchange(other.fill_, nullptr);
    checksum_ = std::exchange(other.checksum_, nullptr);
    checksum_slot_ = std::exchange(other.checksum_slot_, 0);
  }
  return *this;
}

Kernels::~Kernels() { unload(); }

void Kernels::unload() {
  if (api_ == nullptr) return;
  if (checksum_slot_ != 0) api_->mem_free(static_cast<CUdeviceptr>(checksum_slot_));
  if (workspace_ != 0) api_->mem_free(static_cast<CUdeviceptr>(workspace_));
  if (done_counts_ != 0) api_->mem_free(static_cast<CUdeviceptr>(done_counts_));
  if (kv_module_ != nullptr) api_->module_unload(static_cast<CUmodule>(kv_module_));
  if (pattern_module_ != nullptr) api_->module_unload(static_cast<CUmodule>(pattern_module_));
  if (attention_module_ != nullptr) {
    api_->module_unload(static_cast<CUmodule>(attention_module_));
  }
  if (staged_module_ != nullptr) api_->module_unload(static_cast<CUmodule>(staged_module_));
  staged_module_ = nullptr;
  for (int i = 0; i < 2; ++i) attention_staged_[i] = attention_paged_staged_[i] = nullptr;
  checksum_slot_ = 0;
  workspace_ = 0;
  done_counts_ = 0;
  workspace_records_ = 0;
  kv_module_ = pattern_module_ = attention_module_ = nullptr;
  gather_ = scatter_ = fill_ = checksum_ = nullptr;
  for (auto& by_dtype : attention_) by_dtype[0] = by_dtype[1] = by_dtype[2] = nullptr;
  for (auto& by_dtype : attention_paged_) by_dtype[0] = by_dtype[1] = by_dtype[2] = nullptr;
  attention_reduce_ = nullptr;
}

Result<void> Kernels::launch(void* function, uint64_t work_items, uint32_t threads, void** args,
                             Stream stream) const {
  if (work_items == 0) return {};
  const auto blocks = static_cast<unsigned>(std::min(work_items, kMaxBlocks));
  CXLPOOL_CU_TRY(*api_, launch_kernel, static_cast<CUfunction>(function), blocks, 1, 1, threads, 1,
                 1, 0, static_cast<CUstream>(stream), args, nullptr);
  return {};
}

Result<void> Kernels::kv_gather(uint64_t dst, uint64_t arena, uint64_t arena_pages,
                                uint64_t page_index, uint32_t n_pages, uint64_t page_bytes,
                                uint64_t skipped, Stream stream) const {
  void* args[] = {&dst, &arena, &arena_pages, &page_index, &n_pages, &page_bytes, &skipped};
  return launch(gather_, n_pages, kCopyThreads, args, stream);
}

Result<void> Kernels::kv_scatter(uint64_t arena, uint64_t src, uint64_t arena_pages,
                                 uint64_t page_index, uint32_t n_pages, uint64_t page_bytes,
                                 uint64_t skipped, Stream stream) const {
  void* args[] = {&arena, &src, &arena_pages, &page_index, &n_pages, &page_bytes, &skipped};
  return launch(scatter_, n_pages, kCopyThreads, args, stream);
}

namespace {

Result<void> check_attention(const ref::AttentionShape& shape) {
  if (ref::check_shape(shape) != 0) {
    return fail(EINVAL, "decode_attention: bad shape (sizes, kv_heads dividing q_heads, "
                        "head_dim <= " + std::to_string(ref::kMaxHeadDim) + ", finite scale)");
  }
  if (shape.batch > 65535) return fail(EINVAL, "decode_attention: batch > 65535");
  return {};
}

// Tokens a block reads per loop step and the least context worth a split of
// its own: below a few steps the partial write and the reduce cost more than
// the parallelism gains, and a block's loop steps wait on memory one after
// another, so short slices spend their time in latency. On an H100, bf16
// batch 8 context 2048 read 44 % of copy bandwidth in 6.5-step slices, 42 %
// in 4 and 39-41 % in 2 (docs/perf.md, "GPU").
constexpr uint64_t kMinSplitSteps = 6;
// The staged kernels: a slice of at least four stages (two in flight while
// the first is used, and as many again to run at full depth).
constexpr uint64_t kMinStagedSplitSteps = 4;
constexpr uint32_t kMaxSplits = 256;  // the reduce kernel's shared weights
constexpr uint64_t kSplitGranule = 32;  // tokens: a slice is a whole number of warp steps
constexpr uint64_t kNoPoolToken = 0xFFFFFFFFu;  // the paged kernels' "no token" index

// The fields both cache layouts set the same way.
DecodeAttentionParams attention_params(uint64_t q, uint64_t k, uint64_t v, uint64_t seq_lens,
                                       uint64_t out) {
  DecodeAttentionParams p{};
  p.q = q;
  p.k = k;
  p.v = v;
  p.seq_lens = seq_lens;
  p.out = out;
  return p;
}

uint32_t ceil_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace

Result<void> Kernels::set_attention_blocks_per_sm(uint32_t blocks) {
  if (blocks == 0 || blocks > kMaxBlocksPerSm) {
    return fail(EINVAL, "decode_attention: blocks per SM must be 1.." +
                            std::to_string(kMaxBlocksPerSm));
  }
  blocks_per_sm_ = blocks;
  return {};
}

Result<Kernels::AttentionPlan> Kernels::attention_plan(const ref::AttentionShape& shape,
                                                       uint64_t max_context, uint64_t k,
                                                       uint64_t v, bool paged) const {
  if (auto r = check_attention(shape); !r) return tl::unexpected(r.error());
  AttentionPlan plan;
  const uint64_t row_bytes = uint64_t{shape.head_dim} * ref::dtype_bytes(shape.dtype);
  plan.vector_loads = row_bytes % 16 == 0 && k % 16 == 0 && v % 16 == 0;
  // Each lane holds at most kMaxHeadDim / 32 = 8 elements of a token.
  plan.token_lanes = std::min<uint32_t>(32, ceil_pow2((shape.head_dim + 7) / 8));
  const uint32_t group = shape.q_heads / shape.kv_heads;
  const uint32_t chunks = (group + kAttentionHeadsPerBlock - 1) / kAttentionHeadsPerBlock;
  const uint64_t base = uint64_t{shape.batch} * shape.kv_heads * chunks;
  const uint64_t target = uint64_t{sm_count_} * blocks_per_sm_;
  uint64_t splits = (target + base - 1) / base;
  const bool packed = plan.vector_loads && shape.dtype == ref::KvDtype::kBf16;
  plan.staged = staged_ && plan.vector_loads && plan.token_lanes == 16 &&
                !(paged && shape.dtype == ref::KvDtype::kF32);
  // A staged block's loop step is one stage; it keeps copies in flight
  // across steps, so shorter slices pay only the pipeline's fill.
  const uint64_t step =
      plan.staged ? kAttentionStageBytes / (kAttentionStagedMaxDim * ref::dtype_bytes(shape.dtype))
                  : uint64_t{kAttentionWarps} * (32 / plan.token_lanes) *
                        (packed ? kAttentionUnrollPacked : kAttentionUnroll);
  const uint64_t min_steps = plan.staged ? kMinStagedSplitSteps : kMinSplitSteps;
  splits = std::min(splits, std::max<uint64_t>(1, max_context / (step * min_steps)));
  splits = std::min<uint64_t>(splits, kMaxSplits);
  // Records the partials need: within the workspace by construction, checked
  // all the same.
  const uint64_t per_split = uint64_t{shape.batch} * shape.q_heads;
  splits = std::min(splits, std::max<uint64_t>(1, workspace_records_ / per_split));
  splits = std::max<uint64_t>(1, splits);
  // Slices of one length for every row (rows of half the context use half
  // the slices): the blocks do equal work, so no SM waits on the blocks of
  // the longest rows while the others idle. The length is rounded to the
  // kernels' split granule; the count follows from it.
  const uint64_t context = std::max<uint64_t>(1, max_context);
  const uint64_t len = ((context + splits - 1) / splits + kSplitGranule - 1) / kSplitGranule *
                       kSplitGranule;
  plan.split_len = static_cast<uint32_t>(std::min<uint64_t>(len, 0x80000000u));
  plan.n_splits = static_cast<uint32_t>((context + plan.split_len - 1) / plan.split_len);
  if (!equal_slices_) {
    plan.n_splits = static_cast<uint32_t>(splits);
    plan.split_len = 0;
  }
  plan.blocks = static_cast<uint32_t>(base * plan.n_splits);
  return plan;
}

Result<void> Kernels::launch_attention_grid(void* fn, uint32_t x, uint32_t y, uint32_t z,
                                            uint32_t threads, uint32_t shared_bytes, void** args,
                                            Stream stream) const {
  if (!overlap_) {
    CXLPOOL_CU_TRY(*api_, launch_kernel, static_cast<CUfunction>(fn), x, y, z, threads, 1, 1,
                   shared_bytes, static_cast<CUstream>(stream), args, nullptr);
    return {};
  }
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = x;
  config.gridDimY = y;
  config.gridDimZ = z;
  config.blockDimX = threads;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = shared_bytes;
  config.hStream = static_cast<CUstream>(stream);
  config.attrs = &attr;
  config.numAttrs = 1;
  CXLPOOL_CU_TRY(*api_, launch_kernel_ex, &config, static_cast<CUfunction>(fn), args, nullptr);
  return {};
}

Result<void> Kernels::launch_attention(void* const (&fns)[2][3], void* const (&staged)[2],
                                       const ref::AttentionShape& shape, uint64_t max_context,
                                       void* params, Stream stream) const {
  auto& p = *static_cast<DecodeAttentionParams*>(params);
  auto plan = attention_plan(shape, max_context, p.k, p.v, &fns == &attention_paged_);
  if (!plan) return tl::unexpected(plan.error());
  const uint32_t group = shape.q_heads / shape.kv_heads;
  p.q_heads = shape.q_heads;
  p.kv_heads = shape.kv_heads;
  p.head_dim = shape.head_dim;
  p.group = group;
  p.head_chunks = (group + kAttentionHeadsPerBlock - 1) / kAttentionHeadsPerBlock;
  p.n_splits = plan->n_splits;
  p.split_len = plan->split_len;
  p.token_lanes = plan->token_lanes;
  p.scale_log2 = shape.scale * 1.4426950408889634f;  // log2(e)
  p.part_acc = workspace_;
  p.part_ml = workspace_ + workspace_records_ * ref::kMaxHeadDim * sizeof(float);
  p.done_counts = done_counts_;
  // The staged kernels' shared memory is all stages: no room for the fused
  // combine, so they always use the reduce launch.
  const bool fused = fused_reduce_ && !plan->staged;
  p.fused_reduce = fused ? 1 : 0;
  // The paged 16-lane kernels look the table up a step ahead and keep each
  // token's place in the pool in 32 bits: a pool of 2^32 - 1 tokens or more
  // (by its stated size) goes to the kernels that read the lane count from
  // the parameters, which use 64-bit offsets.
  const bool narrow_pool = p.page_tokens == 0 || p.pool_pages < kNoPoolToken / p.page_tokens;
  const int variant = !plan->vector_loads                        ? 0
                      : plan->token_lanes == 16 && narrow_pool ? 2
                                                               : 1;
  const int dtype = shape.dtype == ref::KvDtype::kBf16 ? 1 : 0;
  void* fn = plan->staged ? staged[dtype] : fns[dtype][variant];
  void* args[] = {params};
  if (auto r = launch_attention_grid(fn, shape.kv_heads * p.head_chunks, shape.batch, p.n_splits,
                                     kAttentionThreads,
                                     plan->staged ? kAttentionStagedSharedBytes : 0, args, stream);
      !r) {
    return r;
  }
  if (p.n_splits > 1 && !fused) {
    return launch_attention_grid(attention_reduce_, shape.q_heads, shape.batch, 1,
                                 kAttentionReduceThreads, 0, args, stream);
  }
  return {};
}

Result<void> Kernels::decode_attention(const ref::AttentionShape& shape, uint64_t q, uint64_t k,
                                       uint64_t v, uint64_t row_stride_tokens, uint64_t seq_lens,
                                       uint64_t out, Stream stream) const {
  DecodeAttentionParams p = attention_params(q, k, v, seq_lens, out);
  p.row_stride_tokens = row_stride_tokens;
  return launch_attention(attention_, attention_staged_, shape, row_stride_tokens, &p, stream);
}

Result<void> Kernels::decode_attention_paged(const ref::AttentionShape& shape, uint64_t q,
                                             uint64_t k_pages, uint64_t v_pages,
                                             uint64_t pool_pages, uint32_t page_tokens,
                                             uint64_t block_table, uint32_t blocks_per_row,
                                             uint64_t seq_lens, uint64_t out, uint64_t skipped,
                                             Stream stream) const {
  if (page_tokens == 0) return fail(EINVAL, "decode_attention_paged: page_tokens is 0");
  DecodeAttentionParams p = attention_params(q, k_pages, v_pages, seq_lens, out);
  p.table = block_table;
  p.pool_pages = pool_pages;
  p.skipped = skipped;
  p.blocks_per_row = blocks_per_row;
  p.page_tokens = page_tokens;
  return launch_attention(attention_paged_, attention_paged_staged_, shape,
                          uint64_t{blocks_per_row} * page_tokens, &p, stream);
}

Result<void> Kernels::fill_pattern(uint64_t dst, uint64_t bytes, uint64_t seed,
                                   Stream stream) const {
  const uint64_t words = (bytes + 7) / 8;
  void* args[] = {&dst, &bytes, &seed};
  return launch(fill_, (words + kPatternThreads - 1) / kPatternThreads, kPatternThreads, args,
                stream);
}

Result<uint64_t> Kernels::checksum(uint64_t src, uint64_t bytes) const {
  const uint64_t zero = 0;
  CXLPOOL_CU_TRY(*api_, memcpy_htod, static_cast<CUdeviceptr>(checksum_slot_), &zero, sizeof(zero));
  const uint64_t words = (bytes + 7) / 8;
  void* args[] = {&src, &bytes, const_cast<uint64_t*>(&checksum_slot_)};
  // At least one block even for an empty range: thread 0 adds the length term.
  const uint64_t blocks = std::max<uint64_t>(1, (words + kPatternThreads - 1) / kPatternThreads);
  if (auto r = launch(checksum_, blocks, kPatternThreads, args, nullptr); !r) {
    return tl::unexpected(r.error());
  }
  uint64_t sum = 0;
  CXLPOOL_CU_TRY(*api_, memcpy_dtoh, &sum, static_cast<CUdeviceptr>(checksum_slot_), sizeof(sum));
  return sum;
}

}  // namespace cxlpool::cuda
