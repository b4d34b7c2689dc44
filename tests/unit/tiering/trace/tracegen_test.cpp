// SPDX-License-Identifier: Apache-2.0
// cxlpool-tracegen: quantity parsing, the --info summary, and the CLI's exit
// codes (the binary's path comes in $TRACEGEN).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <fstream>
#include <string>

#include "cxlpool/tiering/trace_file.hpp"
#include "cxlpool/tiering/workloads.hpp"
#include "lackey_import.hpp"
#include "llc_model.hpp"
#include "quantity.hpp"
#include "support/temp_dir.hpp"
#include "trace_summary.hpp"

namespace cxlpool::tracegen {
namespace {

TEST(Quantity, Counts) {
  EXPECT_EQ(*parse_count("4000000"), 4'000'000u);
  EXPECT_EQ(*parse_count("4M"), 4'000'000u);
  EXPECT_EQ(*parse_count("500K"), 500'000u);
  EXPECT_EQ(*parse_count("2G"), 2'000'000'000u);
  EXPECT_EQ(parse_count("4X").error().code, EINVAL);
  EXPECT_EQ(parse_count("M").error().code, EINVAL);
  EXPECT_EQ(parse_count("-1").error().code, EINVAL);
  EXPECT_EQ(parse_count("99999999999999999999").error().code, ERANGE);
  EXPECT_EQ(parse_count("99999999999G").error().code, ERANGE);
}

TEST(Quantity, Durations) {
  EXPECT_EQ(*parse_duration_ns("4s"), 4'000'000'000u);
  EXPECT_EQ(*parse_duration_ns("250ms"), 250'000'000u);
  EXPECT_EQ(*parse_duration_ns("7us"), 7'000u);
  EXPECT_EQ(*parse_duration_ns("12"), 12u);
  EXPECT_EQ(parse_duration_ns("4h").error().code, EINVAL);
}

class TracegenTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.resolve(name).string(); }

  // Exit status of the tool with `args`; stdout goes to out.txt.
  int run(const std::string& args) {
    const char* exe = std::getenv("TRACEGEN");
    if (exe == nullptr) return -1;
    const std::string cmd = std::string(exe) + " " + args + " > " + path("out.txt") + " 2> " + path("err.txt");
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string file(const std::string& name) { return dir_.read(name); }

  test::TempDir dir_{"tracegen"};
};

TEST_F(TracegenTest, SummaryMatchesTheRecords) {
  tiering::WorkloadConfig c;
  c.kind = tiering::WorkloadKind::kSparseKv;
  c.footprint_bytes = 8ull << 20;
  c.accesses = 100'000;
  c.duration_ns = 1'000'000'000;
  auto t = tiering::generate_workload(c);
  ASSERT_TRUE(tiering::write_trace(path("kv.trace"), *t).has_value());
  auto s = summarize_trace(path("kv.trace"), 100'000'000);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  std::map<std::uint64_t, std::uint64_t> masks;
  std::uint64_t writes = 0;
  for (const auto& r : *t) {
    masks[r.address >> 12] |= 1ull << ((r.address >> 6) & 63);  // generated records stay in one line
    writes += r.is_write;
  }
  std::uint64_t sparse = 0;
  for (const auto& [p, m] : masks) sparse += std::popcount(m) <= kSparseMaxWords;
  EXPECT_EQ(s->header.record_count, c.accesses);
  EXPECT_EQ(s->writes, writes);
  EXPECT_EQ(s->pages_touched, masks.size());
  EXPECT_EQ(s->sparse_pages, sparse);
  EXPECT_EQ(s->page_accesses, c.accesses);
  EXPECT_GT(s->top1_share, 0.01);
  EXPECT_LE(s->top1_share, 1.0);
  EXPECT_EQ(s->epochs, 10u);
  EXPECT_GT(s->epoch_sparse_fraction, 0.5);
}

TEST_F(TracegenTest, SummaryRejectsABadFile) {
  std::ofstream(path("bad.trace")) << "not a trace at all, but long enough to hold a header........";
  auto s = summarize_trace(path("bad.trace"), 0);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, EBADMSG);
}

TEST_F(TracegenTest, CommandLine) {
  if (std::getenv("TRACEGEN") == nullptr) GTEST_SKIP() << "TRACEGEN not set (run through meson test)";
  ASSERT_EQ(run("--workload zipf --footprint 1M --accesses 20K --seed 3 -o " + path("z.trace")), 0) << file("err.txt");
  auto t = tiering::read_trace(path("z.trace"));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->size(), 20'000u);
  // Same arguments, same bytes.
  ASSERT_EQ(run("--workload zipf --footprint 1M --accesses 20K --seed 3 -o " + path("z2.trace")), 0);
  EXPECT_EQ(file("z.trace"), file("z2.trace"));

  ASSERT_EQ(run("--info " + path("z.trace") + " --epoch 1s"), 0) << file("err.txt");
  EXPECT_NE(file("out.txt").find("20000 records"), std::string::npos) << file("out.txt");
  ASSERT_EQ(run("--info " + path("z.trace") + " --json"), 0);
  EXPECT_NE(file("out.txt").find("\"records\": 20000"), std::string::npos) << file("out.txt");

  // Usage errors: 2, with a message.
  EXPECT_EQ(run("--workload nope -o " + path("x.trace")), 2);
  EXPECT_NE(file("err.txt").find("unknown workload"), std::string::npos);
  EXPECT_EQ(run("--workload zipf --footprint 12Q -o " + path("x.trace")), 2);
  EXPECT_EQ(run("--workload zipf --footprint 1000 -o " + path("x.trace")), 2);
  EXPECT_EQ(run("--workload zipf"), 2);
  EXPECT_EQ(run("--info a --workload zipf"), 2);
  EXPECT_EQ(run("--bogus"), 2);
  EXPECT_EQ(run("--help"), 0);
  // Failures: 1.
  EXPECT_EQ(run("--info " + path("missing.trace")), 1);
  EXPECT_NE(file("err.txt").find("missing.trace"), std::string::npos);
  std::ofstream(path("junk.trace")) << "junk";
  EXPECT_EQ(run("--info " + path("junk.trace")), 1);
  EXPECT_EQ(run("--workload zipf --footprint 1M --accesses 10 -o " + path("no/such/dir.trace")), 1);
}


TEST(LlcModel, FillsOnMissesAndWritesBackDirtyVictims) {
  EXPECT_FALSE(LlcModel::create(0, 2));
  EXPECT_FALSE(LlcModel::create(3 * 128, 2));  // 3 sets: not a power of two
  EXPECT_FALSE(LlcModel::create(256, 0));
  auto llc = LlcModel::create(256, 2);  // 2 sets of 2 lines
  ASSERT_TRUE(llc);
  std::vector<tiering::TraceRecord> out;
  llc->access(0, 8, true, 1, out);    // line 0 (set 0), dirty
  llc->access(8, 8, false, 2, out);   // hit
  llc->access(128, 8, false, 3, out);  // line 2 (set 0)
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (tiering::TraceRecord{1, 0, 64, false}));
  EXPECT_EQ(out[1], (tiering::TraceRecord{3, 128, 64, false}));
  llc->access(0, 4, false, 4, out);    // hit: line 0 is now the most recent
  llc->access(256, 4, false, 5, out);  // line 4 (set 0): evicts line 2 (clean)
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2], (tiering::TraceRecord{5, 256, 64, false}));
  llc->access(384, 4, false, 6, out);  // line 6: evicts line 0 (dirty): write-back
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[3], (tiering::TraceRecord{6, 384, 64, false}));
  EXPECT_EQ(out[4], (tiering::TraceRecord{6, 0, 64, true}));
  llc->access(60, 8, false, 7, out);  // spans lines 0 and 1: two misses
  EXPECT_EQ(out.size(), 7u);           // fill 0 (its victim, line 4, is clean), fill 1
  EXPECT_EQ(llc->hits(), 2u);
  EXPECT_EQ(llc->writebacks(), 1u);
  llc->access(64, 1, true, 8, out);  // line 1 dirty again
  out.clear();
  llc->flush(9, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (tiering::TraceRecord{9, 64, 64, true}));
}

TEST(Lackey, ParsesAccessLinesAndSkipsValgrindMessages) {
  LackeyAccess a;
  EXPECT_EQ(*parse_lackey_line("==123== Lackey, an example Valgrind tool\n", a), false);
  EXPECT_EQ(*parse_lackey_line("--123-- warning\n", a), false);
  EXPECT_EQ(*parse_lackey_line("", a), false);
  ASSERT_TRUE(*parse_lackey_line("I  0400d7d4,3\n", a));
  EXPECT_TRUE(a.is_fetch);
  EXPECT_EQ(a.address, 0x400d7d4u);
  EXPECT_EQ(a.size, 3u);
  ASSERT_TRUE(*parse_lackey_line(" L 1fff0005d8,8", a));
  EXPECT_FALSE(a.is_fetch);
  EXPECT_FALSE(a.is_write);
  EXPECT_EQ(a.address, 0x1fff0005d8u);
  ASSERT_TRUE(*parse_lackey_line(" S 10,4", a));
  EXPECT_TRUE(a.is_write);
  ASSERT_TRUE(*parse_lackey_line(" M 10,16", a));
  EXPECT_TRUE(a.is_write);
  EXPECT_EQ(a.size, 16u);
  for (const char* bad : {" X 10,4", " L 10", " L zz,4", " L 10,0", " L 10,4x", " L ffffffffffffffff,8", "hello"})
    EXPECT_EQ(parse_lackey_line(bad, a).error().code, EINVAL) << bad;
}

TEST(Lackey, ReadsUntilTheInstructionLimit) {
  test::TempDir dir;
  const std::string path = (dir.path() / "lackey.txt").string();
  std::ofstream(path) << "==1== header\nI  1000,4\n L 2000,8\nI  1004,4\n S 3000,8\nI  1008,2\n M 4000,4\n";
  std::FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::vector<LackeyAccess> seen;
  auto stats = read_lackey(f, 2, [&](const LackeyAccess& a) -> Result<void> {
    if (!a.is_fetch) seen.push_back(a);
    return {};
  });
  std::fclose(f);
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_TRUE(stats->stopped_early);
  EXPECT_EQ(stats->instructions, 2u);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].instruction, 1u);
  EXPECT_EQ(seen[1].instruction, 2u);
  EXPECT_TRUE(seen[1].is_write);

  std::ofstream(path) << "I  1000,4\n L 2000\n";
  f = std::fopen(path.c_str(), "r");
  auto bad = read_lackey(f, 0, [](const LackeyAccess&) -> Result<void> { return {}; });
  std::fclose(f);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos);
}

}  // namespace
}  // namespace cxlpool::tracegen
