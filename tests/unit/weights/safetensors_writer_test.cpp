// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <vector>

#include "cxlpool/weights/safetensors.hpp"
#include "cxlpool/weights/safetensors_writer.hpp"
#include "support/temp_dir.hpp"
#include "support/whole_file.hpp"

namespace cxlpool::weights {
namespace {

TEST(SafetensorsWriter, RoundTripsThroughTheParser) {
  SafetensorsWriter w;
  std::vector<float> a{1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  std::vector<uint16_t> b{7, 8, 9};
  ASSERT_TRUE(w.add_f32("model.layers.0.w", {2, 3}, a));
  ASSERT_TRUE(w.add("model.norm", Dtype::kBF16, {3}, std::as_bytes(std::span(b))));
  w.set_metadata("format", "pt");
  auto bytes = w.serialize();
  auto n = parse_header_size(bytes, bytes.size());
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ((8 + *n) % 8, 0u);
  std::string_view json(reinterpret_cast<const char*>(bytes.data()) + 8, *n);
  auto h = parse_header(json, bytes.size());
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_EQ(h->tensors.size(), 2u);
  EXPECT_EQ(h->metadata.at("format"), "pt");
  const auto* t = h->find("model.layers.0.w");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(bytes.data() + h->tensor_offset_in_file(*t), a.data(), 24), 0);
  t = h->find("model.norm");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, Dtype::kBF16);
  EXPECT_EQ(std::memcmp(bytes.data() + h->tensor_offset_in_file(*t), b.data(), 6), 0);
  // Packed in insertion order, no gaps: the data section is exactly the tensors.
  EXPECT_EQ(h->data_bytes, 30u);
}

TEST(SafetensorsWriter, RejectsBadTensors) {
  SafetensorsWriter w;
  std::vector<float> a(4);
  EXPECT_EQ(w.add_f32("x", {3}, a).error().code, EINVAL);           // size mismatch
  EXPECT_FALSE(w.add_f32("", {4}, a));                              // empty name
  EXPECT_FALSE(w.add_f32("__metadata__", {4}, a));                  // reserved
  EXPECT_FALSE(w.add_f32("x", {1, 1, 1, 1, 1, 1, 1, 1, 4}, a));     // too many dims
  ASSERT_TRUE(w.add_f32("x", {4}, a));
  EXPECT_FALSE(w.add_f32("x", {2, 2}, a));                          // taken
  EXPECT_EQ(w.tensor_count(), 1u);
}

TEST(SafetensorsWriter, WritesAFileTheParserReads) {
  const test::TempDir dir("stw");
  const std::string path = dir.resolve("m.safetensors").string();
  SafetensorsWriter w;
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  ASSERT_TRUE(w.add_f32("h.3.mlp", {10, 100}, v));
  ASSERT_TRUE(w.write_file(path));
  auto h = read_header_file(path);
  ASSERT_TRUE(h) << h.error().message;
  const std::string file = test::read_file(path);
  EXPECT_EQ(file.size(), h->data_offset + 4000);
  EXPECT_EQ(std::memcmp(file.data() + h->data_offset, v.data(), 4000), 0);
  // Identical to serialize().
  auto bytes = w.serialize();
  ASSERT_EQ(bytes.size(), file.size());
  EXPECT_EQ(std::memcmp(bytes.data(), file.data(), file.size()), 0);
}

TEST(SafetensorsWriter, EmptyModelIsValid) {
  SafetensorsWriter w;
  auto bytes = w.serialize();
  auto n = parse_header_size(bytes, bytes.size());
  ASSERT_TRUE(n);
  auto h = parse_header(std::string_view(reinterpret_cast<const char*>(bytes.data()) + 8, *n), bytes.size());
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_TRUE(h->tensors.empty());
}

}  // namespace
}  // namespace cxlpool::weights
