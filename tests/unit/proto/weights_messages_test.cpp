// SPDX-License-Identifier: Apache-2.0
// The shared-weights control messages (60-66): wire layout as
// docs/protocol.md states it, and one rejection per rule, by the encoder
// (EINVAL) and by the decoder on the same bytes written by hand (EPROTO).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codec_checks.hpp"
#include "cxlpool/proto/messages.hpp"
#include "cxlpool/proto/socket_io.hpp"
#include "wire_builder.hpp"

namespace cxlpool::proto {
namespace {

using testing::Bytes;
using testing::datagram;

Bytes wire(const WeightsLoad& m) {
  Bytes b;
  b.u32(m.tier_id).u64(m.max_resident_bytes).str(m.model).u32(static_cast<uint32_t>(m.paths.size()));
  for (const auto& p : m.paths) b.str(p.path);
  return b;
}

Bytes wire(const WeightsLoadReply& m) {
  return Bytes()
      .u32(m.tier_id)
      .u32(m.files)
      .u64(m.tensor_count)
      .u64(m.total_bytes)
      .u64(m.resident_bytes)
      .u64(m.region_bytes)
      .u8(m.loaded)
      .str(m.region_name);
}

Bytes wire(const WeightsListReply& m) {
  Bytes b;
  b.u32(static_cast<uint32_t>(m.models.size()));
  for (const auto& e : m.models) {
    b.u32(e.tier_id).u32(e.files).u32(e.owner_uid).u32(e.opens);
    b.u64(e.tensor_count).u64(e.total_bytes).u64(e.resident_bytes).u64(e.region_bytes);
    b.str(e.model).str(e.region_name);
  }
  return b;
}

WeightsLoad load() {
  return WeightsLoad{.tier_id = 2, .max_resident_bytes = 1 << 20, .model = "tiny",
                     .paths = {WeightsPath{"/m/a.safetensors"}, WeightsPath{"/m/b.safetensors"}}};
}

WeightsLoadReply load_reply() {
  return WeightsLoadReply{.tier_id = 0, .files = 1, .tensor_count = 3, .total_bytes = 300,
                          .resident_bytes = 200, .region_bytes = 8192, .loaded = 1,
                          .region_name = "cxlpool-w-tiny"};
}

TEST(WeightsMessages, LayoutIsTheDocumentedOne) {
  auto check = [](MsgType type, const Message& m, const Bytes& expect) {
    SCOPED_TRACE(message_type_name(type));
    testing::expect_wire_form(m, datagram(type, expect));
  };
  check(MsgType::kWeightsLoad, load(), wire(load()));
  check(MsgType::kWeightsLoadReply, load_reply(), wire(load_reply()));
  check(MsgType::kWeightsOpen, WeightsOpen{"tiny"}, Bytes().str("tiny"));
  check(MsgType::kWeightsUnload, WeightsUnload{"tiny"}, Bytes().str("tiny"));
  check(MsgType::kWeightsUnloadReply, WeightsUnloadReply{.region_bytes = 4096}, Bytes().u64(4096));
  check(MsgType::kWeightsList, WeightsListRequest{}, Bytes());
  WeightsListReply list{.models = {WeightsEntry{.tier_id = 1, .files = 2, .owner_uid = 3, .opens = 4,
                                                .tensor_count = 5, .total_bytes = 6, .resident_bytes = 6,
                                                .region_bytes = 4096, .model = "m",
                                                .region_name = "cxlpool-w-m"}}};
  check(MsgType::kWeightsListReply, list, wire(list));
}

struct Reject {
  const char* label;
  Message message;
  MsgType type;
  Bytes bytes;
  const char* needle;
};

std::vector<Reject> rejects() {
  std::vector<Reject> out;
  auto add_load = [&](const char* label, WeightsLoad m, const char* needle) {
    out.push_back({label, m, MsgType::kWeightsLoad, wire(m), needle});
  };
  auto m = load();
  m.paths.clear();
  add_load("NoPaths", m, "WeightsLoad.paths: no files");
  m = load();
  m.paths[1].path = "relative/b.safetensors";
  add_load("RelativePath", m, "not an absolute path");
  m = load();
  m.paths.assign(kMaxWeightsFiles + 1, WeightsPath{"/x"});
  add_load("TooManyFiles", m, "251 files, at most 250");
  m = load();
  m.model = ".hidden";
  add_load("DotModel", m, "WeightsLoad.model");
  m = load();
  m.model = "a/b";
  add_load("SlashModel", m, "WeightsLoad.model");
  m = load();
  m.model = std::string(kMaxWeightsModelLength + 1, 'm');
  add_load("LongModel", m, "exceeds the limit");
  m = load();
  m.model.clear();
  add_load("EmptyModel", m, "WeightsLoad.model");
  m = load();
  m.paths[0].path = std::string("/a\0b", 4);
  add_load("NulInPath", m, "NUL byte");

  auto r = load_reply();
  r.loaded = 2;
  out.push_back({"LoadedNotBool", r, MsgType::kWeightsLoadReply, wire(r), "WeightsLoadReply.loaded"});
  r = load_reply();
  r.resident_bytes = r.total_bytes + 1;
  out.push_back({"ResidentOverTotal", r, MsgType::kWeightsLoadReply, wire(r), "resident_bytes"});
  r = load_reply();
  r.files = 0;
  out.push_back({"NoFiles", r, MsgType::kWeightsLoadReply, wire(r), "WeightsLoadReply.files"});
  r = load_reply();
  r.region_name = "bad name";
  out.push_back({"BadRegionName", r, MsgType::kWeightsLoadReply, wire(r), "region_name"});
  return out;
}

TEST(WeightsMessages, EveryRuleRejectsOnBothSides) {
  for (const auto& c : rejects()) {
    SCOPED_TRACE(c.label);
    testing::expect_encode_refused(c.message, c.needle);
    testing::expect_decode_refused(datagram(c.type, c.bytes), EPROTO, c.needle);
  }
}

TEST(WeightsMessages, TruncatedAndTrailingBytes) {
  auto bytes = datagram(MsgType::kWeightsLoad, wire(load()));
  bytes.pop_back();
  // Fix payload_length so only the content is short.
  uint32_t len = static_cast<uint32_t>(bytes.size() - kHeaderSize);
  for (int i = 0; i < 4; ++i) bytes[12 + i] = static_cast<std::byte>(len >> (8 * i));
  EXPECT_EQ(decode(bytes).error().code, EPROTO);
  EXPECT_FALSE(decode(datagram(MsgType::kWeightsUnloadReply, Bytes().u64(1).u8(0))));
  EXPECT_FALSE(decode(datagram(MsgType::kWeightsList, Bytes().u8(0))));
}

TEST(WeightsMessages, LoadCarriesOneDescriptorPerPath) {
  WeightsLoad m;
  m.model = "m";
  m.paths = {WeightsPath{"/a"}, WeightsPath{"/b"}, WeightsPath{"/c"}};
  EXPECT_EQ(descriptor_count(Message(m)), 3u);
  EXPECT_EQ(descriptor_count(MsgType::kWeightsLoad), 0u);  // per message, not per type
  EXPECT_EQ(descriptor_count(Message(WeightsOpen{"m"})), 0u);
  EXPECT_EQ(descriptor_count(Message(RegionReply{})), 1u);
  // The most files a load may name travel in one datagram.
  EXPECT_EQ(kMaxFdsPerMessage, kMaxWeightsFiles);
}

}  // namespace
}  // namespace cxlpool::proto
