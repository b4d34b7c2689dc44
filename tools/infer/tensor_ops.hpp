// SPDX-License-Identifier: Apache-2.0
// The decoder's arithmetic on f32 vectors. Every function fixes its order of
// operations, so two runs over the same bytes give the same bits whatever
// memory the operands live in (the point of the reference comparison).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cxlpool::infer {

// Sum of a[i] * b[i] with eight interleaved partial sums combined pairwise.
float dot(const float* a, const float* b, size_t n);

// y[t][o] = dot(w[o], x[t]) for t < tokens: w is [out][in] row-major, x is
// [tokens][in], y is [tokens][out]. Each weight row is used for every token
// before the next one is read.
void matmul(const float* w, const float* x, float* y, size_t tokens, size_t in, size_t out);

// y = x / sqrt(mean(x^2) + eps) * weight.
void rms_norm(const float* x, const float* weight, float* y, size_t n, float eps);

// x[i] = silu(gate[i]) * up[i] (SwiGLU's elementwise part), in place on gate.
void swiglu(float* gate, const float* up, size_t n);

// In-place softmax over n scores (max subtracted first).
void softmax(float* x, size_t n);

// Index of the largest value; the lowest index among equals.
uint32_t argmax(const float* x, size_t n);

// y[i] += x[i].
void add_in_place(float* y, const float* x, size_t n);

}  // namespace cxlpool::infer
