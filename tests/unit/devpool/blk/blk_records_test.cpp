// SPDX-License-Identifier: Apache-2.0
// The storage engine's records: round trips, and every field of a hostile
// command or completion refused with its documented errno.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "cxlpool/devpool/blk_records.hpp"

namespace cxlpool::devpool::blk {
namespace {

DeviceInfo device() {
  DeviceInfo d;
  d.capacity = 1 << 20;
  d.block_size = 4096;
  d.mem_alignment = 512;
  d.max_transfer = 256 * 1024;
  return d;
}

Command read_at(std::uint64_t offset, std::uint32_t length, std::uint64_t buffer) {
  Command c;
  c.opcode = Opcode::kRead;
  c.command_id = 7;
  c.offset = offset;
  c.length = length;
  c.buffer_offset = buffer;
  return c;
}

class Validate : public ::testing::Test {
 protected:
  int code(const Command& c) {
    auto r = validate_command(c, device(), area_);
    return r ? 0 : r.error().code;
  }
  std::vector<std::byte> storage_ = std::vector<std::byte>(64 * 1024);
  std::span<std::byte> area_{storage_};
};

TEST(BlkRecords, CommandRoundTrip) {
  Command c = read_at(4096, 8192, 12288);
  c.opcode = Opcode::kWrite;
  c.flags = kFlagFua;
  c.command_id = 0xdeadbeef;
  const CommandBytes bytes = encode_command(c);
  auto back = decode_command(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, c);
  EXPECT_EQ(command_id_of(bytes), 0xdeadbeefu);
}

TEST(BlkRecords, CommandWireLayoutIsFixed) {
  const CommandBytes b = encode_command(read_at(0x1122334455667788ull, 0x01020304, 0xa0b0c0d0e0f00010ull));
  EXPECT_EQ(b[0], std::byte{0x02});                  // opcode read
  EXPECT_EQ(b[2], std::byte{0x01});                  // namespace 1
  EXPECT_EQ(b[8], std::byte{0x88});                  // offset, little-endian
  EXPECT_EQ(b[16], std::byte{0x04});                 // length
  EXPECT_EQ(b[24], std::byte{0x10});                 // buffer offset
}

TEST(BlkRecords, HostileCommandBytesAreRefused) {
  const CommandBytes good = encode_command(read_at(0, 4096, 0));
  auto mutate = [&](std::size_t at, std::byte v) {
    CommandBytes b = good;
    b[at] = v;
    auto r = decode_command(b);
    return r ? 0 : r.error().code;
  };
  EXPECT_EQ(mutate(0, std::byte{0x7f}), EOPNOTSUPP);  // opcode
  EXPECT_EQ(mutate(1, std::byte{0x80}), EBADMSG);     // unknown flag
  EXPECT_EQ(mutate(2, std::byte{0x02}), EBADMSG);     // another namespace
  EXPECT_EQ(mutate(21, std::byte{1}), EBADMSG);       // reserved after length
  for (std::size_t at = 32; at < kCommandBytes; ++at) EXPECT_EQ(mutate(at, std::byte{1}), EBADMSG) << at;
  EXPECT_EQ(decode_command(std::span(good).first(55)).error().code, EBADMSG);
  // The id of an undecodable command is still there to answer it with.
  CommandBytes b = good;
  b[0] = std::byte{0x7f};
  EXPECT_EQ(command_id_of(b), 7u);
}

TEST(BlkRecords, CompletionRoundTripAndHostileFields) {
  const Completion c{0x10002, -EIO, 0};
  auto back = decode_completion(encode_completion(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, c);
  auto code = [](Completion bad) {
    auto r = decode_completion(encode_completion(bad));
    return r ? 0 : r.error().code;
  };
  EXPECT_EQ(code({1, 5, 0}), EBADMSG);       // positive status
  EXPECT_EQ(code({1, -4096, 0}), EBADMSG);   // not an errno
  EXPECT_EQ(code({1, std::numeric_limits<std::int32_t>::min(), 0}), EBADMSG);
  EXPECT_EQ(code({1, -EIO, 512}), EBADMSG);  // bytes with an error
  CompletionBytes b = encode_completion({1, 0, 4096});
  b[13] = std::byte{1};
  EXPECT_EQ(decode_completion(b).error().code, EBADMSG);
  EXPECT_EQ(decode_completion(std::span(b).first(8)).error().code, EBADMSG);
}

TEST(BlkRecords, IdentifyRoundTripAndBounds) {
  DeviceInfo d = device();
  d.flags = kIdentifyReadOnly;
  auto back = decode_identify(encode_identify(d));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, d);
  EXPECT_TRUE(back->read_only());
  auto code = [](DeviceInfo bad) {
    auto r = decode_identify(encode_identify(bad));
    return r ? 0 : r.error().code;
  };
  DeviceInfo bad = device();
  bad.block_size = 3000;
  EXPECT_EQ(code(bad), EBADMSG);
  bad = device();
  bad.capacity += 1;
  EXPECT_EQ(code(bad), EBADMSG);
  bad = device();
  bad.max_transfer = kMaxTransferBytes * 2;
  EXPECT_EQ(code(bad), EBADMSG);
  bad = device();
  bad.mem_alignment = 8192;
  EXPECT_EQ(code(bad), EBADMSG);
  bad = device();
  bad.queue_depth = 0;
  EXPECT_EQ(code(bad), EBADMSG);
  IdentifyBytes b = encode_identify(device());
  b[0] = std::byte{0};
  EXPECT_EQ(decode_identify(b).error().code, EBADMSG);
}

TEST_F(Validate, AcceptsAlignedCommandsInsideTheDeviceAndTheArea) {
  auto buffer = validate_command(read_at(4096, 8192, 512), device(), area_);
  ASSERT_TRUE(buffer) << buffer.error().message;
  EXPECT_EQ(buffer->data(), area_.data() + 512);
  EXPECT_EQ(buffer->size(), 8192u);
  EXPECT_EQ(code(read_at((1 << 20) - 4096, 4096, 0)), 0);  // the last block
  Command flush;
  flush.opcode = Opcode::kFlush;
  auto none = validate_command(flush, device(), area_);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(Validate, RefusesMisalignedOrOversizedTransfers) {
  EXPECT_EQ(code(read_at(512, 4096, 0)), EINVAL);       // offset
  EXPECT_EQ(code(read_at(0, 4000, 0)), EINVAL);         // length
  EXPECT_EQ(code(read_at(0, 0, 0)), EINVAL);            // empty
  EXPECT_EQ(code(read_at(0, 512 * 1024, 0)), EINVAL);   // over max transfer
  EXPECT_EQ(code(read_at(0, 4096, 100)), EINVAL);       // buffer alignment
}

TEST_F(Validate, RefusesRangesPastTheCapacityWithoutOverflow) {
  EXPECT_EQ(code(read_at(1 << 20, 4096, 0)), ERANGE);
  EXPECT_EQ(code(read_at((1 << 20) - 4096, 8192, 0)), ERANGE);
  EXPECT_EQ(code(read_at(std::numeric_limits<std::uint64_t>::max() - 4095, 4096, 0)), ERANGE);
}

TEST_F(Validate, RefusesBuffersOutsideTheFrontendArea) {
  EXPECT_EQ(code(read_at(0, 4096, 64 * 1024)), EFAULT);
  EXPECT_EQ(code(read_at(0, 8192, 60 * 1024)), EFAULT);
  EXPECT_EQ(code(read_at(0, 4096, std::numeric_limits<std::uint64_t>::max() - 511)), EFAULT);
}

TEST_F(Validate, RefusesFieldsAnOpcodeMustNotCarry) {
  Command flush;
  flush.opcode = Opcode::kFlush;
  flush.length = 4096;
  EXPECT_EQ(code(flush), EINVAL);
  Command fua_read = read_at(0, 4096, 0);
  fua_read.flags = kFlagFua;
  EXPECT_EQ(code(fua_read), EINVAL);
  Command identify;
  identify.opcode = Opcode::kIdentify;
  identify.length = 4096;
  EXPECT_EQ(code(identify), EINVAL);
  identify.length = kIdentifyBytes;
  EXPECT_EQ(code(identify), 0);
}

TEST_F(Validate, RefusesWritesToAReadOnlyDevice) {
  DeviceInfo ro = device();
  ro.flags = kIdentifyReadOnly;
  Command w = read_at(0, 4096, 0);
  w.opcode = Opcode::kWrite;
  EXPECT_EQ(validate_command(w, ro, area_).error().code, EROFS);
}

TEST(BlkLink, GeometryCarriesBlkRecords) {
  const LinkGeometry g = blk_link_geometry(64, 1000);
  EXPECT_EQ(g.requests.record_bytes, kCommandBytes);
  EXPECT_EQ(g.completions.record_bytes, kCompletionBytes);
  EXPECT_GE(g.completions.slots * g.completions.records_per_slot(), 64u);
  EXPECT_EQ(g.frontend_buffer_bytes, 4096u);
  EXPECT_TRUE(check_blk_link(g));
  LinkGeometry net = g;
  net.requests.record_bytes = 16;
  EXPECT_EQ(check_blk_link(net).error().code, EPROTO);
}

}  // namespace
}  // namespace cxlpool::devpool::blk
