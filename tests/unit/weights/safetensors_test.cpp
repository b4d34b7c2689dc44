// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

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


// N one-byte tensors, the shape of a big model's header.
std::string many_tensors(size_t n) {
  std::string json = "{";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) json += ',';
    json += "\"t" + std::to_string(i) + "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[" +
            std::to_string(i) + "," + std::to_string(i + 1) + "]}";
  }
  return json + "}";
}

TEST(Safetensors, RejectsEveryWrongKindOfValue) {
  const std::string ok_rest = R"("shape":[1],"data_offsets":[0,4]})";
  expect_bad(R"({"a":1})", 0, "not an object");
  expect_bad(R"({"a":"x"})", 0, "not an object");
  expect_bad(R"({"a":null})", 0, "not an object");
  expect_bad(R"({"a":true})", 0, "not an object");
  expect_bad(R"({"a":{"dtype":7,)" + ok_rest + "}", 4, "non-string dtype");
  expect_bad(R"({"a":{"dtype":["F32"],)" + ok_rest + "}", 4, "non-string dtype");
  expect_bad(R"({"a":{"dtype":"F32","shape":"1","data_offsets":[0,4]}})", 4, "non-array shape");
  expect_bad(R"({"a":{"dtype":"F32","shape":{},"data_offsets":[0,4]}})", 4, "non-array shape");
  expect_bad(R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", 4, "non-integer or negative");
  expect_bad(R"({"a":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})", 4, "non-integer or negative");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1e30],"data_offsets":[0,4]}})", 4, "non-integer");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 8, "two unsigned");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,-4]}})", 8, "two unsigned");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":"0,4"}})", 8, "two unsigned");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[[0],4]}})", 8, "two unsigned");
  expect_bad(R"({"a":{"dtype":"F32","shape":[1]}})", 8, "data_offsets");
  expect_bad(R"({"__metadata__":[]})", 0, "__metadata__ is not an object");
  expect_bad(R"({"__metadata__":"x"})", 0, "__metadata__ is not an object");
  expect_bad(R"({"__metadata__":{"k":{"x":"y"}}})", 0, "not a string");
  expect_bad(R"({"__metadata__":{"k":"a","k":"b"}})", 0, "duplicate key 'k'");
  expect_bad(R"({"__metadata__":{},"__metadata__":{}})", 0, "duplicate key '__metadata__'");
  expect_bad(R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4, "empty tensor name");
  // Anything after the object, and truncated objects, are not JSON.
  expect_bad(R"({} {})", 0, "not valid JSON");
  expect_bad(R"({"a":{"dtype":"F32")", 0, "not valid JSON");
  expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}\x01", 4, "not valid JSON");
}

TEST(Safetensors, RejectsControlBytesInNamesWithoutQuotingThem) {
  for (const char* escaped : {"\\u0000", "\\u0001", "\\n", "\\u001f", "\\u007f"}) {
    SCOPED_TRACE(escaped);
    const std::string json = std::string(R"({"evil)") + escaped +
                             R"(name":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    auto h = parse(json, 4);
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error().code, EBADMSG);
    EXPECT_NE(h.error().message.find("control byte"), std::string::npos) << h.error().message;
    EXPECT_NE(h.error().message.find("offset 4"), std::string::npos) << h.error().message;
    EXPECT_EQ(h.error().message.find("evil"), std::string::npos) << h.error().message;
  }
  // A raw control byte inside a JSON string is invalid JSON already.
  expect_bad(std::string("{\"a\x01\":{}}", 10), 0, "not valid JSON");
  // An unknown field with control bytes is refused without echoing it.
  auto h = parse(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x\u0000y":1}})", 4);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("unknown field (a key with control bytes"), std::string::npos)
      << h.error().message;
}

TEST(Safetensors, ErrorsDoNotEchoTheLengthPrefix) {
  // A text file: its first 8 bytes read as a length are its contents.
  const std::string text = "password and more text to make a file of it";
  auto n = parse_header_size(std::as_bytes(std::span(text.data(), 8)), text.size());
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, EBADMSG);
  EXPECT_EQ(n.error().message.find("7237970109966541168"), std::string::npos) << n.error().message;
  EXPECT_NE(n.error().message.find("over the limit"), std::string::npos) << n.error().message;
  ParseLimits huge;
  huge.max_header_bytes = ~0ull;
  n = parse_header_size(std::as_bytes(std::span(text.data(), 8)), text.size(), huge);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().message.find("7237970109966541168"), std::string::npos) << n.error().message;
  EXPECT_NE(n.error().message.find("past the end"), std::string::npos) << n.error().message;
  const std::string one("\x01\0\0\0\0\0\0\0", 8);
  n = parse_header_size(std::as_bytes(std::span(one.data(), 8)), 100);
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("too small"), std::string::npos) << n.error().message;
}

TEST(Safetensors, InvalidJsonNamesTheOffsetNotTheBytes) {
  auto h = parse(R"({"secret-token-123" 1})", 0);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("not valid JSON (at byte"), std::string::npos) << h.error().message;
  EXPECT_EQ(h.error().message.find("secret"), std::string::npos) << h.error().message;
}

TEST(Safetensors, LimitsStopTheParse) {
  ParseLimits limits;
  limits.max_header_bytes = 10;
  const std::string json = many_tensors(2);
  auto h = parse_header(json, 8 + json.size() + 2, limits);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("size limit"), std::string::npos) << h.error().message;

  limits = {};
  limits.max_name_bytes = 3;
  const std::string long_name = R"({"abcd":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  h = parse_header(long_name, 8 + long_name.size() + 1, limits);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("longer than 3 bytes"), std::string::npos) << h.error().message;

  limits = {};
  limits.max_metadata_entries = 2;
  const std::string meta = R"({"__metadata__":{"a":"1","b":"2","c":"3"}})";
  h = parse_header(meta, 8 + meta.size(), limits);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("more than 2 entries"), std::string::npos) << h.error().message;
  limits.max_metadata_entries = 3;
  EXPECT_TRUE(parse_header(meta, 8 + meta.size(), limits));

  // The tensor limit is exact: N passes, N + 1 is refused.
  limits = {};
  limits.max_tensors = 100;
  const std::string hundred = many_tensors(100);
  EXPECT_TRUE(parse_header(hundred, 8 + hundred.size() + 100, limits));
  const std::string more = many_tensors(101);
  h = parse_header(more, 8 + more.size() + 101, limits);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("at most 100"), std::string::npos) << h.error().message;
}

TEST(Safetensors, BigHeadersParseUpToTheTensorLimit) {
  // 2^17 tensors (about 7 MB of JSON; the default limit is 2^20, which
  // tests/bench/safetensors_parse_bench times): N parses, one more is refused.
  ParseLimits limits;
  limits.max_tensors = 1u << 17;
  const size_t n = limits.max_tensors;
  std::string json = many_tensors(n);
  auto h = parse_header(json, 8 + json.size() + n, limits);
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_EQ(h->tensors.size(), n);
  EXPECT_EQ(h->tensors.front().name, "t0");
  EXPECT_EQ(h->tensors.back().begin, n - 1);
  json.pop_back();
  json += R"(,"extra":{"dtype":"U8","shape":[1],"data_offsets":[0,0]}})";
  h = parse_header(json, 8 + json.size() + n, limits);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("at most " + std::to_string(n)), std::string::npos) << h.error().message;
}

TEST(Safetensors, DuplicateNamesFarApartAreFound) {
  std::string json = many_tensors(5000);
  json.pop_back();
  json += R"(,"t17":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})";
  auto h = parse(json, 5000);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("duplicate key 't17'"), std::string::npos) << h.error().message;
}

TEST(Safetensors, ReadHeaderTextKeepsTheVerbatimJson) {
  char path[] = "/tmp/cxlpool-st-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string json = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}  )";
  std::string f = file_of(json, 4);
  ASSERT_EQ(write(fd, f.data(), f.size()), static_cast<ssize_t>(f.size()));
  auto text = read_header_text(fd);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(text->json, json);
  EXPECT_EQ(text->file_size, f.size());
  close(fd);
  unlink(path);
  // Not a regular file.
  int dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  EXPECT_EQ(read_header_text(dir).error().code, EINVAL);
  close(dir);
}

}  // namespace
}  // namespace cxlpool::weights
