// SPDX-License-Identifier: Apache-2.0
// cxlpool-infer end to end: the real tool against a real cxlpoold. The tool
// serves its requests once on plain buffers and once through libcxlpool
// (shared weights + streamer, KV arena, prefix reuse and preemption through
// the KV store) and exits 0 only when the logits are bitwise identical.
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "daemon_process.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The tool is built next to the daemon: <build>/daemon/cxlpoold and
// <build>/tools/infer/cxlpool-infer.
std::string infer_binary() {
  const std::filesystem::path daemon = daemon_binary();
  if (daemon.empty()) return {};
  return (daemon.parent_path().parent_path() / "tools" / "infer" / "cxlpool-infer").string();
}

// A small store: 64 KiB slots are the largest chunk the runs make (32
// tokens x 4 layers x K,V x 2 KV heads x 32 x f32).
std::string infer_config() {
  std::ostringstream t;
  t << "[kvstore]\n"
    << "slot_bytes = " << 64 * 1024 << "\n"
    << "dram_bytes = " << 16 * kMiB << "\n"
    << "cxl_bytes = 0\n"
    << "put_window_bytes = " << 2 * kMiB << "\n";
  return TestConfig{.tables = t.str()}.render();
}

class Infer : public testing::Test {
 protected:
  void SetUp() override {
    binary_ = infer_binary();
    ASSERT_FALSE(binary_.empty());
    if (::access(binary_.c_str(), X_OK) != 0) GTEST_SKIP() << "cxlpool-infer is not built (" << binary_ << ")";
    ASSERT_TRUE(daemon_.start());
    model_dir_ = daemon_.dir() + "/model";
    std::filesystem::create_directory(model_dir_);
  }

  // Runs the tool with --json; the parsed summary (null, with a test
  // failure, when it did not print one).
  json run(std::vector<std::string> args, int expected_exit = 0) {
    std::vector<std::string> argv{binary_, "--socket", daemon_.socket(), "--model-dir", model_dir_, "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    ProgramOptions options;
    options.timeout = 240s;
    const ProgramResult r = run_program(argv, options);
    EXPECT_EQ(r.exit_code, expected_exit) << "stdout:\n" << r.out << "\nstderr:\n" << r.err << "\ndaemon log:\n"
                                          << daemon_.log();
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j.is_discarded() ? json() : j;
  }

  DaemonProcess daemon_{infer_config()};
  std::string binary_;
  std::string model_dir_;
};

uint64_t u(const json& j, const char* key) { return j.contains(key) ? j[key].get<uint64_t>() : 0; }

TEST_F(Infer, ShortRunIsIdenticalAndUsesEveryPartOfTheRuntime) {
  const json j = run({"--short"});
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["identical"].get<bool>()) << j.dump(2);
  // Prefix chunks came back from the store instead of being prefilled.
  EXPECT_GT(u(j, "prefix_tokens_reused"), 0u) << j.dump(2);
  EXPECT_EQ(u(j, "prefix_tokens_reused") + u(j, "prompt_tokens_computed"), u(j, "prompt_tokens"));
  // The memory limit preempted rows, which were restored and finished.
  EXPECT_GT(u(j, "rows_preempted"), 0u) << j.dump(2);
  EXPECT_EQ(u(j, "rows_restored"), u(j, "rows_preempted"));
  EXPECT_GT(u(j, "tokens_restored"), 0u);
  EXPECT_LE(j["arena"]["peak_mapped_bytes"].get<uint64_t>(), u(j, "memory_limit_bytes"));
  EXPECT_GT(j["arena"]["reuses"].get<uint64_t>(), 0u);  // freed rows' pages handed on
  EXPECT_GT(j["arena"]["async_steps"].get<uint64_t>(), 0u);
  // Every layer came through the streamer.
  EXPECT_GT(j["weights"]["bytes_streamed"].get<uint64_t>(), 0u);
  EXPECT_GT(j["weights"]["resident_bytes"].get<uint64_t>(), 0u);
  // The run cleaned up after itself: the files, and the chunks it stored.
  EXPECT_TRUE(std::filesystem::is_empty(model_dir_));
  EXPECT_GT(u(j, "chunks_deleted"), 0u);
}

TEST_F(Infer, LayersPastTheWeightsBudgetAreReadFromTheFiles) {
  // 1 MiB keeps the globals and little else resident: most layers stream
  // from the files with O_DIRECT.
  const json j = run({"--short", "--weights-budget", "1M"});
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["identical"].get<bool>()) << j.dump(2);
  EXPECT_GT(j["weights"]["bytes_read_from_files"].get<uint64_t>(), 0u) << j.dump(2);
  EXPECT_LT(j["weights"]["resident_bytes"].get<uint64_t>(), j["model"]["bytes"].get<uint64_t>());
}

TEST_F(Infer, SynchronousStepsWithoutALimitNeverPreempt) {
  const json j = run({"--short", "--no-async", "--memory-limit", "0"});
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["identical"].get<bool>()) << j.dump(2);
  EXPECT_EQ(u(j, "rows_preempted"), 0u);
  EXPECT_EQ(j["arena"]["async_steps"].get<uint64_t>(), 0u);
  EXPECT_GT(u(j, "prefix_tokens_reused"), 0u);
}

TEST_F(Infer, ASecondProcessReusesTheFirstOnesPrompt) {
  // The first run keeps its chunks in the store; the second (another process,
  // the same model and prompts) restores even its first request's prompt.
  const json first = run({"--short", "--keep-cache"});
  const json second = run({"--short"});
  ASSERT_TRUE(first.is_object() && second.is_object());
  EXPECT_TRUE(first["identical"].get<bool>());
  EXPECT_TRUE(second["identical"].get<bool>()) << second.dump(2);
  EXPECT_GT(u(second, "prefix_tokens_reused"), u(first, "prefix_tokens_reused")) << second.dump(2);
}

TEST_F(Infer, WithoutADaemonTheRuntimePathFailsClearly) {
  daemon_.stop();
  std::vector<std::string> argv{binary_, "--socket", daemon_.socket(), "--model-dir", model_dir_, "--short"};
  const ProgramResult r = run_program(argv);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("connect to cxlpoold"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cxlpool::integration
