// SPDX-License-Identifier: Apache-2.0
// kv_gather / kv_scatter: move KV-cache pages between an arena (pages indexed
// by a page list) and a contiguous buffer. CPU reference: reference/kv_copy_ref.cpp.
//
// One block per page (grid-stride over pages); the block's threads copy the
// page in 16-byte vectors when both ends and the page size allow it, else
// byte by byte. Indices outside the arena are skipped and counted, because a
// page list comes from a client and must not let a kernel write past the arena.
#include <cstdint>

namespace {

__device__ __forceinline__ void copy_page(unsigned char* dst, const unsigned char* src,
                                          uint64_t bytes) {
  const bool vector_ok =
      ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes) & 15u) == 0;
  if (vector_ok) {
    uint4* d = reinterpret_cast<uint4*>(dst);
    const uint4* s = reinterpret_cast<const uint4*>(src);
    for (uint64_t i = threadIdx.x; i < bytes / 16; i += blockDim.x) d[i] = s[i];
  } else {
    for (uint64_t i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = src[i];
  }
}

__device__ __forceinline__ void kv_copy(unsigned char* arena, unsigned char* buffer,
                                        uint64_t arena_pages, const uint32_t* page_index,
                                        uint32_t n_pages, uint64_t page_bytes, uint32_t* skipped,
                                        bool to_buffer) {
  for (uint32_t p = blockIdx.x; p < n_pages; p += gridDim.x) {
    const uint64_t page = page_index[p];
    if (page >= arena_pages) {
      if (threadIdx.x == 0 && skipped != nullptr) atomicAdd(skipped, 1u);
      continue;
    }
    unsigned char* in_arena = arena + page * page_bytes;
    unsigned char* in_buffer = buffer + static_cast<uint64_t>(p) * page_bytes;
    if (to_buffer) {
      copy_page(in_buffer, in_arena, page_bytes);
    } else {
      copy_page(in_arena, in_buffer, page_bytes);
    }
  }
}

}  // namespace

extern "C" __global__ void cxlpool_kv_gather(unsigned char* dst, const unsigned char* arena,
                                             uint64_t arena_pages, const uint32_t* page_index,
                                             uint32_t n_pages, uint64_t page_bytes,
                                             uint32_t* skipped) {
  kv_copy(const_cast<unsigned char*>(arena), dst, arena_pages, page_index, n_pages, page_bytes,
          skipped, true);
}

extern "C" __global__ void cxlpool_kv_scatter(unsigned char* arena, const unsigned char* src,
                                              uint64_t arena_pages, const uint32_t* page_index,
                                              uint32_t n_pages, uint64_t page_bytes,
                                              uint32_t* skipped) {
  kv_copy(arena, const_cast<unsigned char*>(src), arena_pages, page_index, n_pages, page_bytes,
          skipped, false);
}
