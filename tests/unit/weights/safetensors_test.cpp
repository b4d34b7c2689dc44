// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cxlpool/weights/safetensors.hpp"

namespace cxlpool::weights {
namespace {

// A whole file: prefix + `json` + `data_bytes` zero bytes.
std::string file_of(const std::string& json, size_t data_bytes) {
  std::string f(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) f[i] = static_cast<char>(n >> (8 * i));
  return f + json + std::string(data_bytes, '\0');
}

Result<SafetensorsHeader> parse(const std::string& json, size_t data_bytes) {
  return parse_header(json, 8 + json.size() + data_bytes);
}

void expect_bad(const std::string& json, size_t data_bytes, const std::string& needle) {
  auto h = parse(json, data_bytes);
  ASSERT_FALSE(h) << json;
  EXPECT_EQ(h.error().code, EBADMSG);
  EXPECT_NE(h.error().message.find(needle), std::string::npos) << h.error().message;
}

TEST(Safetensors, ParsesTensorsInDataOrderWithMetadata) {
  std::string json =
      R"({"b":{"dtype":"F32","shape":[2,3],"data_offsets":[8,32]},)"
      R"("a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},)"
      R"("__metadata__":{"format":"pt"}})";
  auto h = parse(json, 32);
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_EQ(h->tensors.size(), 2u);
  EXPECT_EQ(h->tensors[0].name, "a");
  EXPECT_EQ(h->tensors[0].dtype, Dtype::kBF16);
  EXPECT_EQ(h->tensors[1].name, "b");
  EXPECT_EQ(h->tensors[1].shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(h->tensors[1].bytes(), 24u);
  EXPECT_EQ(h->data_offset, 8 + json.size());
  EXPECT_EQ(h->data_bytes, 32u);
  EXPECT_EQ(h->metadata.at("format"), "pt");
  EXPECT_EQ(h->tensor_offset_in_file(h->tensors[1]), 8 + json.size() + 8);
  ASSERT_NE(h->find("b"), nullptr);
  EXPECT_EQ(h->find("zz"), nullptr);
}

TEST(Safetensors, ScalarsEmptyTensorsAndPaddingAreFine) {
  std::string json = R"({"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
                     R"("e":{"dtype":"F16","shape":[0,5],"data_offsets":[8,8]}}     )";
  auto h = parse(json, 8);
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(h->tensors.size(), 2u);
}

TEST(Safetensors, RejectsMalformedHeaders) {
  expect_bad("not json", 0, "does not start");
  expect_bad("{\"a\":", 0, "not valid JSON");
  expect_bad("[]", 0, "does not start");
  expect_bad(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", 4, "unknown dtype");
  expect_bad(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, "non-integer or negative");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4, "non-integer");
  expect_bad(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8, "need 8");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 8, "end before begin");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 8, "past the data");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 8, "two unsigned");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 8, "unknown field");
  expect_bad(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 8, "dtype");
  expect_bad(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 8, "shape");
  expect_bad(R"({"a":[1,2]})", 8, "not an object");
  expect_bad(R"({"__metadata__":{"k":1}})", 0, "not a string");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 8,
             "dimensions");
  expect_bad(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 8,
             "overflows");
}

TEST(Safetensors, RejectsOverlapsAndDuplicates) {
  expect_bad(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
             12, "overlap");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
             R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             8, "duplicate key 'a'");
  expect_bad(R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 8,
             "duplicate key 'dtype'");
}

TEST(Safetensors, HeaderSizePrefixLimits) {
  std::string f = file_of("{}", 0);
  auto n = parse_header_size(std::as_bytes(std::span(f.data(), 8)), f.size());
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 2u);
  // Past the end of the file.
  EXPECT_FALSE(parse_header_size(std::as_bytes(std::span(f.data(), 8)), 9));
  // Over the limit.
  ParseLimits small;
  small.max_header_bytes = 1;
  EXPECT_FALSE(parse_header_size(std::as_bytes(std::span(f.data(), 8)), f.size(), small));
  // Too short a file.
  EXPECT_FALSE(parse_header_size(std::as_bytes(std::span(f.data(), 4)), 4));
}

TEST(Safetensors, TensorCountAndNameLimits) {
  ParseLimits limits;
  limits.max_tensors = 1;
  std::string json = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                     R"("b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
  auto h = parse_header(json, 8 + json.size() + 2, limits);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("at most 1"), std::string::npos);
  limits = {};
  limits.max_name_bytes = 0;
  EXPECT_FALSE(parse_header(json, 8 + json.size() + 2, limits));
}

TEST(Safetensors, ReadsFromAFile) {
  char path[] = "/tmp/cxlpool-st-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string f = file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  ASSERT_EQ(write(fd, f.data(), f.size()), static_cast<ssize_t>(f.size()));
  auto h = read_header(fd);
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(h->tensors.at(0).name, "w");
  close(fd);
  // A truncated copy is rejected with the path in the message.
  ASSERT_EQ(truncate(path, 20), 0);
  auto bad = read_header_file(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EBADMSG);
  EXPECT_NE(bad.error().message.find(path), std::string::npos);
  unlink(path);
  EXPECT_EQ(read_header_file(path).error().code, ENOENT);
}

}  // namespace
}  // namespace cxlpool::weights
