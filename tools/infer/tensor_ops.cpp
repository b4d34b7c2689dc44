// SPDX-License-Identifier: Apache-2.0
#include "tensor_ops.hpp"

#include <cmath>

#include "vector_math.hpp"

namespace cxlpool::infer {

float dot(const float* a, const float* b, size_t n) { return cuda::ref::dot(a, b, n); }

void matmul(const float* w, const float* x, float* y, size_t tokens, size_t in, size_t out) {
  for (size_t o = 0; o < out; ++o) {
    const float* row = w + o * in;
    for (size_t t = 0; t < tokens; ++t) y[t * out + o] = dot(row, x + t * in, in);
  }
}

void rms_norm(const float* x, const float* weight, float* y, size_t n, float eps) {
  const float mean_square = dot(x, x, n) / static_cast<float>(n);
  const float scale = 1.0f / std::sqrt(mean_square + eps);
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

void swiglu(float* gate, const float* up, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax(float* x, size_t n) { cuda::ref::softmax(x, n); }

uint32_t argmax(const float* x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return static_cast<uint32_t>(best);
}

void add_in_place(float* y, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace cxlpool::infer
