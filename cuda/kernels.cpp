// SPDX-License-Identifier: Apache-2.0
#include "kernels.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

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
      {&k.attention_[0], {k.attention_module_, "cxlpool_decode_attention_f32"}},
      {&k.attention_[1], {k.attention_module_, "cxlpool_decode_attention_bf16"}},
      {&k.attention_paged_[0], {k.attention_module_, "cxlpool_decode_attention_paged_f32"}},
      {&k.attention_paged_[1], {k.attention_module_, "cxlpool_decode_attention_paged_bf16"}},
  };
  for (const auto& [slot, where] : wanted) {
    auto fn = function(*k.api_, where.first, where.second);
    if (!fn) return tl::unexpected(fn.error());
    *slot = *fn;
  }
  auto slot = ctx.alloc(sizeof(uint64_t));
  if (!slot) return tl::unexpected(slot.error());
  k.checksum_slot_ = *slot;
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
      attention_[i] = std::exchange(other.attention_[i], nullptr);
      attention_paged_[i] = std::exchange(other.attention_paged_[i], nullptr);
    }
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
  if (kv_module_ != nullptr) api_->module_unload(static_cast<CUmodule>(kv_module_));
  if (pattern_module_ != nullptr) api_->module_unload(static_cast<CUmodule>(pattern_module_));
  if (attention_module_ != nullptr) {
    api_->module_unload(static_cast<CUmodule>(attention_module_));
  }
  checksum_slot_ = 0;
  kv_module_ = pattern_module_ = attention_module_ = nullptr;
  gather_ = scatter_ = fill_ = checksum_ = nullptr;
  attention_[0] = attention_[1] = attention_paged_[0] = attention_paged_[1] = nullptr;
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

// Must match kWarps * 32 in kernels/decode_attention.cu.
constexpr uint32_t kAttentionThreads = 128;

Result<void> check_attention(const ref::AttentionShape& shape) {
  if (ref::check_shape(shape) != 0) {
    return fail(EINVAL, "decode_attention: bad shape (sizes, kv_heads dividing q_heads, "
                        "head_dim <= " + std::to_string(ref::kMaxHeadDim) + ", finite scale)");
  }
  if (shape.batch > 65535) return fail(EINVAL, "decode_attention: batch > 65535");
  return {};
}

}  // namespace

Result<void> Kernels::decode_attention(const ref::AttentionShape& shape, uint64_t q, uint64_t k,
                                       uint64_t v, uint64_t row_stride_tokens, uint64_t seq_lens,
                                       uint64_t out, Stream stream) const {
  if (auto r = check_attention(shape); !r) return r;
  unsigned q_heads = shape.q_heads, kv_heads = shape.kv_heads, head_dim = shape.head_dim;
  float scale = shape.scale;
  void* args[] = {&q, &k, &v, &seq_lens, &out, &q_heads, &kv_heads, &head_dim, &scale,
                  &row_stride_tokens};
  void* fn = attention_[shape.dtype == ref::KvDtype::kBf16 ? 1 : 0];
  CXLPOOL_CU_TRY(*api_, launch_kernel, static_cast<CUfunction>(fn), shape.q_heads, shape.batch,
                 1, kAttentionThreads, 1, 1, 0, static_cast<CUstream>(stream), args, nullptr);
  return {};
}

Result<void> Kernels::decode_attention_paged(const ref::AttentionShape& shape, uint64_t q,
                                             uint64_t k_pages, uint64_t v_pages,
                                             uint64_t pool_pages, uint32_t page_tokens,
                                             uint64_t block_table, uint32_t blocks_per_row,
                                             uint64_t seq_lens, uint64_t out, uint64_t skipped,
                                             Stream stream) const {
  if (auto r = check_attention(shape); !r) return r;
  if (page_tokens == 0) return fail(EINVAL, "decode_attention_paged: page_tokens is 0");
  unsigned q_heads = shape.q_heads, kv_heads = shape.kv_heads, head_dim = shape.head_dim;
  float scale = shape.scale;
  void* args[] = {&q,     &k_pages,     &v_pages,        &seq_lens,    &out,
                  &q_heads, &kv_heads,  &head_dim,       &scale,       &block_table,
                  &blocks_per_row, &page_tokens, &pool_pages, &skipped};
  void* fn = attention_paged_[shape.dtype == ref::KvDtype::kBf16 ? 1 : 0];
  CXLPOOL_CU_TRY(*api_, launch_kernel, static_cast<CUfunction>(fn), shape.q_heads, shape.batch,
                 1, kAttentionThreads, 1, 1, 0, static_cast<CUstream>(stream), args, nullptr);
  return {};
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
