// SPDX-License-Identifier: Apache-2.0
#include "tensor_ops.hpp"

#include <cmath>

namespace cxlpool::infer {

float dot(const float* a, const float* b, size_t n) {
  // Eight independent sums let the compiler vectorize without reassociating:
  // the order below is the definition, not an optimization detail.
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  for (size_t j = 0; i < n; ++i, ++j) s[j] += a[i] * b[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

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

void softmax(float* x, size_t n) {
  if (n == 0) return;
  float max = x[0];
  for (size_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (size_t i = 0; i < n; ++i) x[i] *= inv;
}

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
