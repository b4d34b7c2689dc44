// SPDX-License-Identifier: Apache-2.0
// The decoder's arithmetic against values worked out by hand.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "rope.hpp"
#include "tensor_ops.hpp"

namespace cxlpool::infer {
namespace {

TEST(InferOps, DotOfShortAndLongVectors) {
  const float a[3] = {1, 2, 3};
  const float b[3] = {4, -5, 6};
  EXPECT_EQ(dot(a, b, 3), 12.0f);  // 4 - 10 + 18
  std::vector<float> x(19), y(19);
  for (int i = 0; i < 19; ++i) {
    x[i] = static_cast<float>(i + 1);
    y[i] = 1.0f;
  }
  EXPECT_EQ(dot(x.data(), y.data(), 19), 190.0f);  // 1 + ... + 19
  EXPECT_EQ(dot(x.data(), y.data(), 0), 0.0f);
}

TEST(InferOps, MatmulIsRowsTimesTokens) {
  // w = [[1, 2], [3, 4], [0, -1]] (out 3, in 2); tokens x0 = (1, 1), x1 = (2, -1).
  const float w[6] = {1, 2, 3, 4, 0, -1};
  const float x[4] = {1, 1, 2, -1};
  float y[6];
  matmul(w, x, y, 2, 2, 3);
  const float expected[6] = {3, 7, -1, 0, 2, 1};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], expected[i]) << i;
}

TEST(InferOps, RmsNormScalesToUnitRootMeanSquare) {
  const float x[2] = {3, 4};  // mean square 12.5
  const float w[2] = {1, 2};
  float y[2];
  rms_norm(x, w, y, 2, 0.0f);
  const float s = 1.0f / std::sqrt(12.5f);
  EXPECT_FLOAT_EQ(y[0], 3 * s);
  EXPECT_FLOAT_EQ(y[1], 8 * s);
}

TEST(InferOps, SoftmaxAndSwigluAndArgmax) {
  float p[3] = {0, std::log(2.0f), std::log(5.0f)};  // exp: 1, 2, 5
  softmax(p, 3);
  EXPECT_NEAR(p[0], 0.125f, 1e-6);
  EXPECT_NEAR(p[1], 0.25f, 1e-6);
  EXPECT_NEAR(p[2], 0.625f, 1e-6);

  float gate[2] = {0, 2};
  const float up[2] = {5, 3};
  swiglu(gate, up, 2);
  EXPECT_EQ(gate[0], 0.0f);                                      // silu(0) = 0
  EXPECT_NEAR(gate[1], 2.0f / (1.0f + std::exp(-2.0f)) * 3, 1e-6);  // silu(2) * 3

  const float v[5] = {1, 7, 3, 7, -2};
  EXPECT_EQ(argmax(v, 5), 1u);  // the first of equal maxima
}

TEST(InferOps, RopeRotatesPairsByPositionTimesFrequency) {
  // head_dim 4: pairs (0, 2) at frequency 1 and (1, 3) at theta^-0.5 = 0.01.
  RopeTable rope(4, 8, 10000.0f);
  float at0[4] = {1, 2, 3, 4};
  rope.apply(at0, 1, 0);
  EXPECT_EQ(at0[0], 1.0f);
  EXPECT_EQ(at0[3], 4.0f);

  float x[4] = {1, 1, 0, 0};
  rope.apply(x, 1, 2);
  EXPECT_NEAR(x[0], std::cos(2.0), 1e-6);   // (1, 0) rotated by 2 rad
  EXPECT_NEAR(x[2], std::sin(2.0), 1e-6);
  EXPECT_NEAR(x[1], std::cos(0.02), 1e-6);  // rotated by 2 * 0.01
  EXPECT_NEAR(x[3], std::sin(0.02), 1e-6);

  // (0, 1) on the first pair turns to (-sin, cos).
  float y[4] = {0, 0, 1, 0};
  rope.apply(y, 1, 1);
  EXPECT_NEAR(y[0], -std::sin(1.0), 1e-6);
  EXPECT_NEAR(y[2], std::cos(1.0), 1e-6);

  // Each head is rotated on its own.
  float two[8] = {1, 0, 0, 0, 0, 1, 0, 0};
  rope.apply(two, 2, 5);
  EXPECT_NEAR(two[0], std::cos(5.0), 1e-6);
  EXPECT_NEAR(two[2], std::sin(5.0), 1e-6);
  EXPECT_EQ(two[4], 0.0f);
  EXPECT_NEAR(two[5], std::cos(0.05), 1e-6);
  EXPECT_NEAR(two[7], std::sin(0.05), 1e-6);
}

}  // namespace
}  // namespace cxlpool::infer
