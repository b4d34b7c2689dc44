// SPDX-License-Identifier: Apache-2.0
// End to end: cxlpool-tiering-eval --quick writes every result file, and
// they parse.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "result_files.hpp"
#include "support/temp_dir.hpp"

namespace {

using cxlpool::tiering::eval::test::expect_svg_files;
using cxlpool::tiering::eval::test::read_file;

TEST(TieringEvalTool, QuickRunWritesParsableResults) {
  const char* exe = std::getenv("CXLPOOL_TIERING_EVAL");
  ASSERT_NE(exe, nullptr) << "CXLPOOL_TIERING_EVAL names the tool (set by meson test)";
  const cxlpool::test::TempDir scratch("tiering-eval-tool");
  const auto dir = scratch.resolve("results");
  const auto out_file = scratch.resolve("out");
  const std::string cmd = std::string(exe) + " --quick --sampling-rate 1,1/8 --results " + dir.string() + " > " +
                          out_file.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << read_file(out_file);

  const std::string out = read_file(out_file);
  EXPECT_NE(out.find("access-count ratio"), std::string::npos);

  const auto j = nlohmann::json::parse(read_file(dir / "results.json"));
  ASSERT_EQ(j["traces"].size(), 4u);
  // 4 workloads x (no-migration, oracle, hindsight, damon, autonuma + 2 M5 x 2 rates).
  ASSERT_EQ(j["results"].size(), 4u * 9u);
  std::set<std::string> policies;
  for (const auto& r : j["results"]) {
    policies.insert(r["policy"].get<std::string>());
    const double share = r["tiering"]["fast_share"].get<double>();
    EXPECT_GE(share, 0.0);
    EXPECT_LE(share, 1.0);
    if (r["kind"] == "oracle") {
      EXPECT_DOUBLE_EQ(r["detection"]["ratio"].get<double>(), 1.0);
    }
    if (r["kind"] == "no-migration" || r["kind"] == "hindsight") {
      EXPECT_FALSE(r.contains("detection"));
    }
  }
  EXPECT_EQ(policies, (std::set<std::string>{"no-migration", "oracle", "hindsight", "damon", "autonuma", "m5-hpt", "m5-hwt",
                                             "m5-hpt@1/8", "m5-hwt@1/8"}));
  // The oracle bounds every policy's share (same trace, same capacity).
  for (const auto& r : j["results"]) EXPECT_LE(r["share_vs_oracle"].get<double>(), 1.0 + 1e-9) << r["policy"];

  const std::string csv = read_file(dir / "results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 36);
  EXPECT_NE(read_file(dir / "results.md").find("## Results"), std::string::npos);
  expect_svg_files(dir, {"ratio.svg", "share_zipf.svg", "share_shifting.svg", "share_sparse-kv.svg", "share_graph.svg"});
}

TEST(TieringEvalTool, RejectsBadArguments) {
  const char* exe = std::getenv("CXLPOOL_TIERING_EVAL");
  ASSERT_NE(exe, nullptr);
  for (const char* args : {" --quick --sampling-rate 2", " --quick --policies bogus", " --workload nope", "",
                           " --quick --sampling-exact 0", " --quick --sampling-exact 256",
                           " --quick --m5-burst-idle-ms -1", " --quick --m5-burst-idle-ms 1e20"}) {
    const std::string cmd = std::string(exe) + args + " > /dev/null 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) != 0) << args;
  }
}

}  // namespace
