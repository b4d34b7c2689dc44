// SPDX-License-Identifier: Apache-2.0
// The KV namespace the tests and benchmarks open through the C ABI: one
// model and layout, bf16, tensor-parallel rank 0 of 1. Header-only: its
// users already link libcxlpool.
#pragma once

#include <cstdint>

#include "cxlpool/kv.h"

namespace cxlpool::test {

inline cxlpool_kv_namespace_spec kv_namespace_spec(const char* model, const char* layout, uint32_t chunk_tokens,
                                                   uint32_t mode = 0) {
  cxlpool_kv_namespace_spec spec{};
  spec.model_id = model;
  spec.layout = layout;
  spec.dtype = "bf16";
  spec.tp_rank = 0;
  spec.tp_size = 1;
  spec.chunk_tokens = chunk_tokens;
  spec.mode = mode;
  return spec;
}

}  // namespace cxlpool::test
