// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/trace_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "support/whole_file.hpp"

namespace cxlpool::tiering {
namespace {

class TraceFileTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.resolve(name).string(); }

  test::TempDir dir_{"trace-file"};
};

std::vector<TraceRecord> sample(std::size_t n) {
  std::vector<TraceRecord> v;
  for (std::size_t i = 0; i < n; ++i) {
    v.push_back({i * 10 + (i % 3 == 0 ? 0 : 1), 0x100000 + (i * 4160) % 65536 + (i % 7) * 8,
                 static_cast<std::uint32_t>(8 + (i % 5) * 60), i % 4 == 1});
  }
  return v;
}

// Writes little-endian v at offset p of a record or header.
void poke(std::vector<std::byte>& b, std::size_t at, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
std::size_t rec(std::size_t index, std::size_t field) { return kTraceHeaderBytes + index * kTraceRecordBytes + field; }

::testing::AssertionResult rejected(const Result<std::vector<TraceRecord>>& r, int code, const std::string& needle) {
  if (r) return ::testing::AssertionFailure() << "accepted";
  if (r.error().code != code) return ::testing::AssertionFailure() << "code " << r.error().code << ": " << r.error().message;
  if (r.error().message.find(needle) == std::string::npos) {
    return ::testing::AssertionFailure() << "message '" << r.error().message << "' lacks '" << needle << "'";
  }
  return ::testing::AssertionSuccess();
}

TEST_F(TraceFileTest, RoundTripsThroughAFile) {
  const auto records = sample(1000);
  ASSERT_TRUE(write_trace(path("a.trace"), records).has_value());
  auto back = read_trace(path("a.trace"));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, records);
  // The file is exactly the in-memory encoding.
  EXPECT_EQ(test::read_bytes(path("a.trace")), *encode_trace(records));
  EXPECT_EQ(std::filesystem::file_size(path("a.trace")), kTraceHeaderBytes + 1000 * kTraceRecordBytes);
}

TEST_F(TraceFileTest, HeaderSummarisesTheRecords) {
  std::vector<TraceRecord> r = {{5, 0x2000, 64, false}, {7, 0x1000, 8, true}, {9, 0x3000, 100, false}};
  ASSERT_TRUE(write_trace(path("s.trace"), r).has_value());
  auto reader = TraceReader::open(path("s.trace"));
  ASSERT_TRUE(reader.has_value()) << reader.error().message;
  const TraceHeader& h = reader->header();
  EXPECT_EQ(h.version, kTraceVersion);
  EXPECT_EQ(h.flags, kTraceFlagComplete);
  EXPECT_EQ(h.record_count, 3u);
  EXPECT_EQ(h.address_min, 0x1000u);
  EXPECT_EQ(h.address_end, 0x3000u + 100);
  EXPECT_EQ(h.first_timestamp_ns, 5u);
  EXPECT_EQ(h.last_timestamp_ns, 9u);
}

TEST_F(TraceFileTest, EmptyTraceIsValid) {
  ASSERT_TRUE(write_trace(path("e.trace"), {}).has_value());
  auto back = read_trace(path("e.trace"));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_TRUE(back->empty());
  EXPECT_EQ(std::filesystem::file_size(path("e.trace")), kTraceHeaderBytes);
}

TEST_F(TraceFileTest, StreamsManyBatchesBothWays) {
  const auto records = sample(50'000);  // more than one write buffer and read chunk
  auto writer = TraceWriter::create(path("big.trace"));
  ASSERT_TRUE(writer.has_value());
  for (std::size_t at = 0; at < records.size(); at += 777) {
    const std::size_t n = std::min<std::size_t>(777, records.size() - at);
    ASSERT_TRUE(writer->write(std::span(records).subspan(at, n)).has_value());
  }
  EXPECT_EQ(writer->records_written(), records.size());
  ASSERT_TRUE(writer->finish().has_value());
  EXPECT_EQ(writer->finish().error().code, EBADF);
  EXPECT_EQ(writer->write(records).error().code, EBADF);

  auto reader = TraceReader::open(path("big.trace"));
  ASSERT_TRUE(reader.has_value());
  std::vector<TraceRecord> all, batch;
  for (;;) {
    auto n = reader->next_batch(batch, 1000);
    ASSERT_TRUE(n.has_value()) << n.error().message;
    if (*n == 0) break;
    EXPECT_LE(*n, 1000u);
    all.insert(all.end(), batch.begin(), batch.end());
  }
  EXPECT_EQ(reader->position(), records.size());
  EXPECT_EQ(all, records);
  EXPECT_EQ(*reader->next_batch(batch, 10), 0u);
  EXPECT_EQ(reader->next_batch(batch, 0).error().code, EINVAL);
}

TEST_F(TraceFileTest, WriterRejectsBadRecordsNamingTheIndex) {
  auto writer = TraceWriter::create(path("w.trace"));
  ASSERT_TRUE(writer.has_value());
  std::vector<TraceRecord> first = {{10, 0, 8, false}, {20, 64, 8, false}};
  ASSERT_TRUE(writer->write(first).has_value());
  std::vector<TraceRecord> zero = {{30, 0, 8, false}, {31, 0, 0, false}};
  auto r = writer->write(zero);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("record 3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("size 0"), std::string::npos);
  EXPECT_EQ(writer->records_written(), 2u);  // the rejected batch left nothing

  std::vector<TraceRecord> back = {{19, 0, 8, false}};
  r = writer->write(back);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("record 2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("backwards"), std::string::npos);

  std::vector<TraceRecord> wrap = {{40, ~0ull - 3, 8, false}};
  r = writer->write(wrap);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("2^64"), std::string::npos);
  ASSERT_TRUE(writer->finish().has_value());
  EXPECT_EQ(read_trace(path("w.trace"))->size(), 2u);
  EXPECT_EQ(encode_trace(zero).error().code, EINVAL);
}

TEST_F(TraceFileTest, UnfinishedFileIsRejected) {
  {
    auto writer = TraceWriter::create(path("u.trace"));
    ASSERT_TRUE(writer.has_value());
    ASSERT_TRUE(writer->write(sample(20000)).has_value());
  }
  EXPECT_TRUE(rejected(read_trace(path("u.trace")), EBADMSG, "not finished"));
}

TEST_F(TraceFileTest, MissingFileReportsErrno) {
  auto r = read_trace(path("nope.trace"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ENOENT);
  EXPECT_NE(r.error().message.find("nope.trace"), std::string::npos);
}

class Corrupt : public TraceFileTest {
 protected:
  void SetUp() override {
    TraceFileTest::SetUp();
    good_ = *encode_trace(sample(10));
  }
  // Both readers must reject with the same code and wording.
  ::testing::AssertionResult both_reject(const std::vector<std::byte>& bytes, int code, const std::string& needle) {
    auto mem = rejected(decode_trace(bytes), code, needle);
    if (!mem) return mem << " (decode_trace)";
    test::write_file(path("c.trace"), bytes);
    auto file = rejected(read_trace(path("c.trace")), code, needle);
    if (!file) return file << " (read_trace)";
    return ::testing::AssertionSuccess();
  }
  std::vector<std::byte> good_;
};

TEST_F(Corrupt, GoodBytesDecode) { EXPECT_EQ(*decode_trace(good_), sample(10)); }

TEST_F(Corrupt, BadMagic) {
  auto b = good_;
  b[0] = std::byte{'X'};
  EXPECT_TRUE(both_reject(b, EBADMSG, "magic"));
}

TEST_F(Corrupt, HeaderChecksum) {
  auto b = good_;
  poke(b, 24, 12345, 8);
  EXPECT_TRUE(both_reject(b, EBADMSG, "checksum"));
}

TEST_F(Corrupt, NewerVersion) {
  auto b = good_;
  TraceHeader h = *decode_trace_header(good_);
  h.version = 2;
  const auto raw = encode_trace_header(h);
  std::memcpy(b.data(), raw.data(), raw.size());
  EXPECT_TRUE(both_reject(b, ENOTSUP, "version 2"));
}

TEST_F(Corrupt, UnknownFlags) {
  TraceHeader h = *decode_trace_header(good_);
  h.flags |= 0x10;
  auto b = good_;
  const auto raw = encode_trace_header(h);
  std::memcpy(b.data(), raw.data(), raw.size());
  EXPECT_TRUE(both_reject(b, EBADMSG, "flag"));
}

TEST_F(Corrupt, ShortHeader) {
  std::vector<std::byte> b(good_.begin(), good_.begin() + 40);
  EXPECT_TRUE(both_reject(b, EBADMSG, "truncated"));
}

TEST_F(Corrupt, TruncatedRecords) {
  std::vector<std::byte> b(good_.begin(), good_.end() - 30);
  EXPECT_TRUE(rejected(decode_trace(b), EBADMSG, "header says 10 records"));
  test::write_file(path("t.trace"), b);
  EXPECT_TRUE(rejected(read_trace(path("t.trace")), EBADMSG, "truncated"));
}

TEST_F(Corrupt, TrailingBytes) {
  auto b = good_;
  b.push_back(std::byte{0});
  EXPECT_TRUE(both_reject(b, EBADMSG, "10 records"));
}

TEST_F(Corrupt, CountMismatch) {
  TraceHeader h = *decode_trace_header(good_);
  h.record_count = 9;
  auto b = good_;
  const auto raw = encode_trace_header(h);
  std::memcpy(b.data(), raw.data(), raw.size());
  EXPECT_TRUE(both_reject(b, EBADMSG, "9 records"));
}

TEST_F(Corrupt, SizeZeroNamesTheRecord) {
  auto b = good_;
  poke(b, rec(4, 16), 0, 4);
  EXPECT_TRUE(both_reject(b, EBADMSG, "record 4: size 0"));
}

TEST_F(Corrupt, TimestampBackwardsNamesTheRecord) {
  auto b = good_;
  poke(b, rec(6, 0), 1, 8);
  EXPECT_TRUE(both_reject(b, EBADMSG, "record 6: timestamp 1 ns goes backwards"));
}

TEST_F(Corrupt, UnknownOp) {
  auto b = good_;
  b[rec(2, 20)] = std::byte{7};
  EXPECT_TRUE(both_reject(b, EBADMSG, "record 2: unknown op"));
}

TEST_F(Corrupt, ReservedRecordBytes) {
  auto b = good_;
  b[rec(9, 23)] = std::byte{1};
  EXPECT_TRUE(both_reject(b, EBADMSG, "record 9: nonzero reserved"));
}

TEST_F(Corrupt, AddressOverflow) {
  auto b = good_;
  poke(b, rec(3, 8), ~0ull - 2, 8);
  EXPECT_TRUE(both_reject(b, EBADMSG, "record 3: address + size past 2^64"));
}

TEST_F(Corrupt, SummaryMismatch) {
  TraceHeader h = *decode_trace_header(good_);
  h.address_min += 8;
  auto b = good_;
  auto raw = encode_trace_header(h);
  std::memcpy(b.data(), raw.data(), raw.size());
  EXPECT_TRUE(both_reject(b, EBADMSG, "address range"));
  h = *decode_trace_header(good_);
  h.last_timestamp_ns += 1;
  b = good_;
  raw = encode_trace_header(h);
  std::memcpy(b.data(), raw.data(), raw.size());
  EXPECT_TRUE(both_reject(b, EBADMSG, "timestamps"));
}

TEST_F(Corrupt, ReaderStaysFailedAfterABadRecord) {
  auto b = good_;
  poke(b, rec(1, 16), 0, 4);
  test::write_file(path("p.trace"), b);
  auto reader = TraceReader::open(path("p.trace"));
  ASSERT_TRUE(reader.has_value());
  std::vector<TraceRecord> batch;
  EXPECT_EQ(reader->next_batch(batch, 100).error().code, EBADMSG);
  EXPECT_EQ(reader->next_batch(batch, 100).error().code, EBADMSG);
}

}  // namespace
}  // namespace cxlpool::tiering
