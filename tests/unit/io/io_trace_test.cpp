// SPDX-License-Identifier: Apache-2.0
// Trace readers: bpftrace block_rq_issue lines and fio iologs (v2 waits, v3
// time stamps), checked on hand-written traces and on an iolog written by
// the installed fio.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/temp_dir.hpp"
#include "trace/trace.hpp"

namespace cxlpool::io {
namespace {

Trace parse_ok(const std::string& text, std::string_view format) {
  auto trace = parse_trace(text, format, "trace");
  EXPECT_TRUE(trace) << (trace ? "" : trace.error().message);
  return trace ? *trace : Trace{};
}

std::string parse_error(const std::string& text, std::string_view format) {
  auto trace = parse_trace(text, format, "trace");
  EXPECT_FALSE(trace);
  return trace ? std::string() : trace.error().message;
}

TEST(IoTrace, BpftraceBlockRequests) {
  const Trace t = parse_ok(R"(Attaching 1 probe...
nsecs rwbs bytes sector nr_sector
1000500 R 131072 2048 256
1000000 WS 4096 8 8
1002000 FF 0 0 0
1003000 D 1048576 4096 2048
1004000 RA 0 100 16
1005000 FWS 0 0 0
)",
                           "bpftrace");
  ASSERT_EQ(t.ops.size(), 3u);
  // Sorted by time and made relative to the first request.
  EXPECT_EQ(t.ops[0].time_ns, 0u);
  EXPECT_EQ(t.ops[0].direction, kWriteDir);
  EXPECT_EQ(t.ops[0].offset, 8u * 512);
  EXPECT_EQ(t.ops[0].bytes, 4096u);
  EXPECT_EQ(t.ops[1].time_ns, 500u);
  EXPECT_EQ(t.ops[1].direction, kReadDir);
  EXPECT_EQ(t.ops[1].offset, 2048u * 512);
  EXPECT_EQ(t.ops[1].bytes, 131072u);
  EXPECT_EQ(t.ops[2].bytes, 16u * 512);  // bytes 0: the sector count says how much
  EXPECT_EQ(t.ops[2].time_ns, 4000u);
  EXPECT_EQ(t.summary.flushes, 2u);
  EXPECT_EQ(t.summary.discards, 1u);
}

TEST(IoTrace, BpftraceErrorsNameTheLine) {
  EXPECT_EQ(parse_error("1 R 4096 0 8\n2 R 4096\n", "bpftrace"),
            "trace:2: expected 5 columns (nsecs rwbs bytes sector nr_sector), got 3");
  EXPECT_EQ(parse_error("1 R 4k 0 8\n", "bpftrace"), "trace:1: bytes '4k' is not a number");
  EXPECT_EQ(parse_error("1 Q 4096 0 8\n", "bpftrace"), "trace:1: rwbs 'Q' is not a block-layer rwbs string");
  EXPECT_EQ(parse_error("1 R 8589934592 0 8\n", "bpftrace"), "trace:1: a request of 8589934592 bytes is too large");
}

TEST(IoTrace, FioIologVersion2WaitsAccumulate) {
  const Trace t = parse_ok(R"(fio version 2 iolog
/dev/sdb add
/dev/sdb open
/dev/sdb read 0 4096
/dev/sdb wait 1500 0
/dev/sdb write 8192 65536
/dev/sdb sync 0 0
/dev/sdb trim 0 4096
/dev/sdb close
)",
                           "fio-iolog");
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.ops[0].time_ns, 0u);
  EXPECT_EQ(t.ops[0].direction, kReadDir);
  EXPECT_EQ(t.ops[1].time_ns, 1'500'000u);
  EXPECT_EQ(t.ops[1].direction, kWriteDir);
  EXPECT_EQ(t.ops[1].offset, 8192u);
  EXPECT_EQ(t.ops[1].bytes, 65536u);
  EXPECT_EQ(t.summary.flushes, 1u);
  EXPECT_EQ(t.summary.discards, 1u);
  EXPECT_EQ(t.summary.files, 1u);
}

TEST(IoTrace, FioIologVersion3TimeStampsAreMicroseconds) {
  const Trace t = parse_ok("fio version 3 iolog\n22 /f add\n130 /f open\n136 /f read 0 4096\n"
                           "2385 /f write 45056 4096\n3000 /g read 0 512\n33492 /f close\n",
                           "");  // detected from the header
  ASSERT_EQ(t.ops.size(), 3u);
  EXPECT_EQ(t.ops[0].time_ns, 0u);
  EXPECT_EQ(t.ops[1].time_ns, (2385u - 136u) * 1000u);
  EXPECT_EQ(t.ops[1].direction, kWriteDir);
  EXPECT_EQ(t.summary.files, 2u);
  EXPECT_EQ(parse_error("fio version 3 iolog\n5 /f read 0\n", ""), "trace:2: expected 'time filename action [offset length]'");
  EXPECT_EQ(parse_error("fio version 2 iolog\n/f frob 0 1\n", ""), "trace:2: unknown action 'frob'");
  EXPECT_EQ(parse_error("fio version 9 iolog\n", "fio-iolog"),
            "trace:1: not a fio iolog version 2 or 3 (first line 'fio version 9 iolog')");
  EXPECT_EQ(parse_error("x\n", "blktrace"), "trace: unknown trace format 'blktrace' (bpftrace, fio-iolog)");
  EXPECT_TRUE(is_trace_format("bpftrace"));
  EXPECT_FALSE(is_trace_format("blkparse"));
}

TEST(IoTrace, LoadsFilesAndReportsMissingOnes) {
  const test::TempDir tmp("io-trace");
  const auto& dir = tmp.path();
  auto path = dir / "t.bt";
  std::ofstream(path) << "10 R 4096 0 8\n20 W 4096 8 8\n";
  auto ops = read_trace(path.string(), "");
  ASSERT_TRUE(ops) << ops.error().message;
  EXPECT_EQ(ops->size(), 2u);
  auto missing = read_trace((dir / "none").string(), "bpftrace");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ENOENT);
}

// The iolog the installed fio writes parses to the I/Os fio reports.
TEST(IoTrace, ReadsTheIologFioWrites) {
  if (std::system("fio --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "fio is not installed";
  const test::TempDir tmp("io-trace");
  const auto& dir = tmp.path();
  auto log = dir / "fio.iolog";
  std::string cmd = "fio --name=t --filename=" + (dir / "data").string() +
                    " --size=256k --bs=4k --rw=randrw --randseed=7 --thinktime=100 --write_iolog=" + log.string() +
                    " --output-format=terse >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto trace = load_trace(log.string(), "fio-iolog");
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->ops.size(), 64u);  // 256 KiB in 4 KiB requests
  std::uint64_t reads = 0;
  for (std::size_t i = 0; i < trace->ops.size(); ++i) {
    EXPECT_EQ(trace->ops[i].bytes, 4096u);
    EXPECT_LT(trace->ops[i].offset, 256u * 1024);
    if (i > 0) {
      EXPECT_GE(trace->ops[i].time_ns, trace->ops[i - 1].time_ns);
    }
    reads += trace->ops[i].direction == kReadDir;
  }
  EXPECT_GT(reads, 0u);
  EXPECT_LT(reads, 64u);
  // 100 us of think time between I/Os shows in the time stamps.
  EXPECT_GE(trace->ops.back().time_ns, 63u * 100'000u);
}

}  // namespace
}  // namespace cxlpool::io
