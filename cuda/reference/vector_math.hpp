// SPDX-License-Identifier: Apache-2.0
// f32 vector arithmetic with a fixed order of operations, shared by the CPU
// decode-attention reference and cxlpool-infer's model math, so both give the
// same bits for the same inputs whichever of them computes a result.
#pragma once

#include <cmath>
#include <cstddef>

namespace cxlpool::cuda::ref {

// Sum of a[i] * b[i]: lane j sums elements j, j+8, j+16, ...; the eight
// lanes are then added pairwise. Independent lanes let the compiler
// vectorize without reassociating: the order is the definition.
inline float dot(const float* a, const float* b, size_t n) {
  constexpr size_t kLanes = 8;
  float lane[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) lane[j] += a[i + j] * b[i + j];
  }
  for (size_t j = 0; i < n; ++i, ++j) lane[j] += a[i] * b[i];
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// In-place softmax over n scores, the largest subtracted first.
// Normalising by one reciprocal keeps one division per call, not per score.
inline void softmax(float* x, size_t n) {
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

}  // namespace cxlpool::cuda::ref
