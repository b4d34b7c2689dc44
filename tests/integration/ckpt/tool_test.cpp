// SPDX-License-Identifier: Apache-2.0
// cxlpool-ckpt dump / show, as an operator runs them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cxlpool/ckpt/manifest.hpp"

#include "support/child_process.hpp"
#include "support/ckpt_target_process.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::ckpt {
namespace {

using integration::run_program;

class CkptTool : public ::testing::Test {
 protected:
  void SetUp() override {
    target_ = test::ckpt_target_program();
    tool_ = test::ckpt_target_program("CXLPOOL_CKPT");
    if (target_.empty() || tool_.empty()) GTEST_SKIP() << "CXLPOOL_CKPT_TARGET / CXLPOOL_CKPT not set (run through meson test)";
  }
  std::string target_, tool_;
  test::TempDir dir_;
};

TEST_F(CkptTool, DumpThenShow) {
  test::CkptTarget t(target_, {"threads"});
  ASSERT_TRUE(t.started());
  const std::string image = (dir_.path() / "image").string();
  auto dump = run_program({tool_, "dump", std::to_string(t.pid()), image});
  if (dump.exit_code != 0 && dump.err.find("Operation not permitted") != std::string::npos) {
    GTEST_SKIP() << "ptrace not permitted: " << dump.err;
  }
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  EXPECT_NE(dump.out.find("4 threads"), std::string::npos) << dump.out;
  ASSERT_TRUE(t.report()) << "the target does not run on after dump";
  auto show = run_program({tool_, "show", image, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto j = nlohmann::json::parse(show.out);
  EXPECT_EQ(j["process"]["pid"], t.pid());
  EXPECT_EQ(j["threads"].size(), 4u);
  EXPECT_EQ(j["version"], kFormatVersion);
  std::set<std::string> names;
  for (const auto& th : j["threads"]) names.insert(th["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"ckpt_target", "spin", "wait", "sleep"}));
  EXPECT_EQ(j["fds"][0]["kind"], "stdio");
  auto text = run_program({tool_, "show", image});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("checkpoint of pid " + std::to_string(t.pid())), std::string::npos) << text.out;
  EXPECT_EQ(t.stop(), 0);
}

TEST_F(CkptTool, DumpKillEndsTheTarget) {
  test::CkptTarget t(target_, {"loop"});
  ASSERT_TRUE(t.started());
  const std::string image = (dir_.path() / "image").string();
  auto dump = run_program({tool_, "dump", std::to_string(t.pid()), image, "--kill"});
  if (dump.exit_code != 0 && dump.err.find("Operation not permitted") != std::string::npos) {
    GTEST_SKIP() << "ptrace not permitted: " << dump.err;
  }
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  const int status = t.wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

TEST_F(CkptTool, RefusalNamesTheReasonAndLeavesNoImage) {
  test::CkptTarget t(target_, {"refuse-epoll"});
  ASSERT_TRUE(t.started());
  const std::string image = (dir_.path() / "image").string();
  auto dump = run_program({tool_, "dump", std::to_string(t.pid()), image});
  EXPECT_EQ(dump.exit_code, 1);
  if (dump.err.find("Operation not permitted") == std::string::npos) {
    EXPECT_NE(dump.err.find("epoll"), std::string::npos) << dump.err;
  }
  EXPECT_NE(::access(image.c_str(), F_OK), 0) << "a refused checkpoint left its image";
  EXPECT_TRUE(t.report());
}

TEST_F(CkptTool, ShowRefusesWhatIsNotAnImage) {
  const std::string path = (dir_.path() / "not-an-image").string();
  std::ofstream(path) << std::string(8192, 'x');
  auto show = run_program({tool_, "show", path});
  EXPECT_EQ(show.exit_code, 1);
  EXPECT_NE(show.err.find("magic"), std::string::npos) << show.err;
  auto usage = run_program({tool_, "dump"});
  EXPECT_EQ(usage.exit_code, 2);
}

}  // namespace
}  // namespace cxlpool::ckpt
