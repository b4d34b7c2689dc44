// SPDX-License-Identifier: Apache-2.0
// Checkpoints through a real cxlpoold (as root): the target program is
// checkpointed with cxlpoolctl (its pidfd travels to the daemon), listed,
// restored under each policy with the test's pipes as the clone's stdio and
// compared with the original's own report; ten clones; removal while a
// clone runs; the image moved to another tier under a clone; refusals for
// another uid and over quota.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "clone_pipes.hpp"
#include "ctl_runner.hpp"
#include "cxlpool/client/connection.hpp"
#include "cxlpool/cxlpool.h"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "support/child_process.hpp"
#include "support/ckpt_target_process.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using client::Connection;
using namespace std::chrono_literals;

class CkptDaemon : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "checkpoints through the daemon need root (ptrace, clone3 set_tid)";
    target_program_ = test::ckpt_target_program();
    if (target_program_.empty()) GTEST_SKIP() << "CXLPOOL_CKPT_TARGET not set";
  }

  void start(const std::string& tables = "") {
    daemon_ = std::make_unique<DaemonProcess>(TestConfig{.daemon = kOpenToAll, .tables = tables}.render());
    ASSERT_TRUE(daemon_->start());
    auto conn = Connection::open(daemon_->socket(), "ckpt-test");
    ASSERT_TRUE(conn) << conn.error().message;
    conn_ = std::move(*conn);
  }

  Result<proto::CkptRestoreReply> restore(const std::string& name, proto::CkptPolicy policy, uint32_t count,
                                          const std::vector<int>& stdio = {}) {
    return conn_->call_for<proto::CkptRestoreReply>(proto::CkptRestore{policy, count, name}, stdio);
  }

  static void kill_clones(const proto::CkptRestoreReply& reply) {
    // The keeper is its namespace's init: the clone goes with it.
    for (const auto& c : reply.clones) ::kill(static_cast<pid_t>(c.keeper), SIGKILL);
  }

  std::string target_program_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<Connection> conn_;
};

TEST_F(CkptDaemon, CreateListRestoreUnderEachPolicy) {
  start();
  test::CkptTarget target(target_program_, {"threads"});
  ASSERT_TRUE(target.started());
  auto before = target.report();
  ASSERT_TRUE(before);
  const ProgramResult made =
      run_ctl(daemon_->socket(), {"ckpt", "create", std::to_string(target.pid()), "warm", "--tier", kEmuTier});
  ASSERT_EQ(made.exit_code, 0) << made.err << daemon_->log();
  EXPECT_NE(made.out.find("warm"), std::string::npos) << made.out;

  const auto list = run_ctl_json(daemon_->socket(), {"ckpt", "list"});
  ASSERT_TRUE(list.is_array() && list.size() == 1) << list;
  EXPECT_EQ(list[0]["name"], "warm");
  EXPECT_GT(list[0]["bytes"].get<uint64_t>(), 256u << 10);  // the 256 KiB pattern at least
  EXPECT_EQ(list[0]["threads"].get<uint32_t>(), 4u);
  EXPECT_EQ(list[0]["owner_uid"].get<uint32_t>(), 0u);
  EXPECT_EQ(list[0]["pid"].get<int>(), target.pid());
  // The image is a region of the pool, charged on its tier.
  const auto regions = run_ctl_json(daemon_->socket(), {"regions"});
  ASSERT_TRUE(regions.is_array() && regions.size() == 1) << regions;
  EXPECT_EQ(regions[0]["id"], list[0]["region"]);

  // The original runs on: it still answers.
  ASSERT_TRUE(target.report());
  for (auto policy : {proto::CkptPolicy::kMow, proto::CkptPolicy::kMoa, proto::CkptPolicy::kHybrid}) {
    SCOPED_TRACE(static_cast<int>(policy));
    ClonePipes pipes;
    auto reply = restore("warm", policy, 1, pipes.stdio());
    ASSERT_TRUE(reply) << reply.error().message << daemon_->log();
    ASSERT_EQ(reply->clones.size(), 1u);
    EXPECT_EQ(reply->clones[0].ns_pid, static_cast<uint32_t>(target.pid()));
    EXPECT_NE(reply->clones[0].pid, static_cast<uint32_t>(target.pid()));
    const auto r = pipes.report();
    ASSERT_TRUE(r.contains("digest")) << "the clone did not answer";
    EXPECT_EQ(r.at("digest"), before->at("digest")) << "the clone's memory differs from the original's";
    EXPECT_EQ(r.at("pid"), before->at("pid")) << "getpid() in the clone is the original's pid";
    pipes.exit_clone();
    kill_clones(*reply);
  }
  const auto stats = run_ctl_json(daemon_->socket(), {"stats"});
  EXPECT_NE(stats.dump().find("ckpt.restores"), std::string::npos);
  EXPECT_EQ(target.stop(), 0);
}

TEST_F(CkptDaemon, TenClonesThenRemoveWhileOneRuns) {
  start();
  test::CkptTarget target(target_program_, {"loop"});
  ASSERT_TRUE(target.started());
  auto before = target.report();
  ASSERT_TRUE(before);
  ASSERT_EQ(run_ctl(daemon_->socket(), {"ckpt", "create", std::to_string(target.pid()), "ten", "--kill"}).exit_code, 0)
      << daemon_->log();
  EXPECT_NE(target.wait(), -1) << "--kill leaves the target running";

  // One stdin for all ten that never ends (at end of input the target exits).
  ClonePipes shared;
  auto ten = restore("ten", proto::CkptPolicy::kMow, 10, shared.stdio());
  ASSERT_TRUE(ten) << ten.error().message << daemon_->log();
  ASSERT_EQ(ten->clones.size(), 10u);
  std::set<uint32_t> pids;
  for (const auto& c : ten->clones) {
    pids.insert(c.pid);
    EXPECT_EQ(::kill(static_cast<pid_t>(c.pid), 0), 0) << "clone " << c.pid << " is not running";
  }
  EXPECT_EQ(pids.size(), 10u);
  kill_clones(*ten);

  ClonePipes pipes;
  auto one = restore("ten", proto::CkptPolicy::kMow, 1, pipes.stdio());
  ASSERT_TRUE(one) << one.error().message;
  const ProgramResult rm = run_ctl(daemon_->socket(), {"ckpt", "rm", "ten"});
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  // The clone maps the image's file: its pages stay after the checkpoint goes.
  const auto r = pipes.report();
  EXPECT_EQ(r.count("digest") ? r.at("digest") : "", before->at("digest"));
  pipes.exit_clone();
  kill_clones(*one);

  auto gone = restore("ten", proto::CkptPolicy::kMow, 1);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ENOENT);
  EXPECT_EQ(run_ctl_json(daemon_->socket(), {"ckpt", "list"}).size(), 0u);
  EXPECT_EQ(run_ctl_json(daemon_->socket(), {"regions"}).size(), 0u) << "the image's region outlived the checkpoint";
}

// The image is a region like any other: moved to a tier on another NUMA
// node while a mow clone maps it (the daemon moves the page-cache pages the
// clone shares, MPOL_MF_MOVE_ALL), the clone and a clone restored after the
// move read what the original had.
TEST_F(CkptDaemon, TheImageMovesToAnotherTierWhileACloneMapsIt) {
  start();
  auto admin = connect_admin(daemon_->socket());
  ASSERT_TRUE(admin);
  const std::vector<proto::TierInfo> tiers = list_tiers(*admin);
  const proto::TierInfo* from = nullptr;
  const proto::TierInfo* to = nullptr;
  for (const auto& t : tiers) {
    if (t.numa_node < 0) continue;
    if (from == nullptr) from = &t;
    else if (to == nullptr && t.numa_node != from->numa_node) to = &t;
  }
  if (from == nullptr || to == nullptr) {
    GTEST_SKIP() << "the daemon's tiers lie on one NUMA node (this host has one): a move between them moves no page";
  }
  test::CkptTarget target(target_program_, {"loop"});
  ASSERT_TRUE(target.started());
  auto before = target.report();
  ASSERT_TRUE(before);
  ASSERT_EQ(run_ctl(daemon_->socket(), {"ckpt", "create", std::to_string(target.pid()), "moving", "--tier", from->name,
                                        "--kill"}).exit_code, 0)
      << daemon_->log();
  target.wait();
  const auto list = run_ctl_json(daemon_->socket(), {"ckpt", "list"});
  ASSERT_TRUE(list.is_array() && list.size() == 1) << list;
  const uint64_t region = list[0]["region"].get<uint64_t>();

  ClonePipes pipes;
  auto clone = restore("moving", proto::CkptPolicy::kMow, 1, pipes.stdio());
  ASSERT_TRUE(clone) << clone.error().message << daemon_->log();
  const auto mapped = pipes.report();
  ASSERT_TRUE(mapped.contains("digest")) << "the clone did not answer";
  EXPECT_EQ(mapped.at("digest"), before->at("digest"));

  const auto moved = run_ctl_json(daemon_->socket(), {"region", "migrate", std::to_string(region), to->name});
  ASSERT_TRUE(moved.is_object()) << moved << daemon_->log();
  EXPECT_EQ(moved.at("to_tier").get<uint32_t>(), to->id);
  EXPECT_GT(moved.at("pages_moved").get<uint64_t>(), 0u) << moved;
  EXPECT_EQ(moved.at("pages_failed").get<uint64_t>(), 0u) << moved;
  const auto regions = list_regions(*admin);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].tier_id, to->id);

  const auto after = pipes.report();
  EXPECT_EQ(after.count("digest") ? after.at("digest") : "", before->at("digest"))
      << "the clone's memory changed when its image moved";
  ClonePipes later_pipes;
  auto later = restore("moving", proto::CkptPolicy::kMow, 1, later_pipes.stdio());
  ASSERT_TRUE(later) << later.error().message;
  const auto r = later_pipes.report();
  EXPECT_EQ(r.count("digest") ? r.at("digest") : "", before->at("digest"))
      << "a clone restored from the moved image differs";
  later_pipes.exit_clone();
  pipes.exit_clone();
  kill_clones(*later);
  kill_clones(*clone);
}

// Another uid may not checkpoint root's process, nor restore or remove
// root's checkpoint; listing is open to everyone.
TEST_F(CkptDaemon, OtherUsersAreRefused) {
  start();
  test::CkptTarget target(target_program_, {"loop"});
  ASSERT_TRUE(target.started());
  ASSERT_EQ(run_ctl(daemon_->socket(), {"ckpt", "create", std::to_string(target.pid()), "mine"}).exit_code, 0)
      << daemon_->log();
  const std::string socket = daemon_->socket();
  const uint32_t pid = static_cast<uint32_t>(target.pid());
  const std::string failures = run_checks_in_child(
      [&](ChildChecks& check) {
        auto conn = Connection::open(socket, "other");
        CHILD_EXPECT(check, conn.has_value());
        if (!conn) return;
        auto made = (*conn)->call(proto::CkptCreate{.pid = pid, .name = "theirs"});
        CHILD_EXPECT(check, !made && made.error().code == EPERM);
        auto restored = (*conn)->call(proto::CkptRestore{.name = "mine"});
        CHILD_EXPECT(check, !restored && restored.error().code == EPERM);
        auto removed = (*conn)->call(proto::CkptRemove{"mine"});
        CHILD_EXPECT(check, !removed && removed.error().code == EPERM);
        auto list = (*conn)->call_for<proto::CkptListReply>(proto::CkptListRequest{});
        CHILD_EXPECT(check, list && list->checkpoints.size() == 1);
      },
      RunAs{});
  EXPECT_EQ(failures, "");
  // A name in use is refused before anything is stopped.
  auto again = conn_->call(proto::CkptCreate{.pid = pid, .name = "mine"});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, EEXIST);
  EXPECT_EQ(target.stop(), 0);
}

// The image is charged to its owner: over quota the checkpoint fails, the
// target runs on and nothing is left behind.
TEST_F(CkptDaemon, QuotaRefusesTheImage) {
  start("[quota]\ndefault_bytes = \"64K\"\n");
  test::CkptTarget target(target_program_, {"loop"});
  ASSERT_TRUE(target.started());
  const ProgramResult made = run_ctl(daemon_->socket(), {"ckpt", "create", std::to_string(target.pid()), "big"});
  EXPECT_EQ(made.exit_code, 1);
  EXPECT_NE(made.err.find("quota"), std::string::npos) << made.err;
  EXPECT_TRUE(target.report()) << "the target did not survive a refused checkpoint";
  EXPECT_EQ(run_ctl_json(daemon_->socket(), {"ckpt", "list"}).size(), 0u);
  EXPECT_EQ(target.stop(), 0);
}

// With --kill the quota is checked before the capture (from the target's
// private memory) and again, on the image, before the kill: a refused
// checkpoint never costs the target its life.
TEST_F(CkptDaemon, QuotaIsCheckedBeforeAKillingCapture) {
  start("[quota]\ndefault_bytes = \"1M\"\n");
  test::CkptTarget small(target_program_, {"loop"});
  test::CkptTarget large(target_program_, {"sparse"});  // 1 GiB of heap, 4 MiB of it written
  ASSERT_TRUE(small.started());
  ASSERT_TRUE(large.started());
  const ProgramResult refused =
      run_ctl(daemon_->socket(), {"ckpt", "create", std::to_string(large.pid()), "big", "--kill"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("refused before capture"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("quota"), std::string::npos) << refused.err;
  EXPECT_TRUE(large.report()) << "the target did not survive a refused checkpoint";
  EXPECT_EQ(run_ctl_json(daemon_->socket(), {"ckpt", "list"}).size(), 0u);
  // One that fits is taken, and killed.
  const ProgramResult made =
      run_ctl(daemon_->socket(), {"ckpt", "create", std::to_string(small.pid()), "small", "--kill"});
  ASSERT_EQ(made.exit_code, 0) << made.err << daemon_->log();
  EXPECT_EQ(run_ctl_json(daemon_->socket(), {"ckpt", "list"}).size(), 1u);
  EXPECT_NE(small.wait(), -1) << "the checkpointed target still runs";
  EXPECT_EQ(large.stop(), 0);
}

// A restorer that hangs does not hold the checkpoint worker: past
// [ckpt] restore_timeout_ms the restore fails with ETIMEDOUT, the clone it
// had started is gone (its stdout, the test's pipe, reaches EOF), and the
// next request is served.
TEST_F(CkptDaemon, AHungRestorerTimesOutAndItsClonesAreKilled) {
  daemon_ = std::make_unique<DaemonProcess>(
      TestConfig{.daemon = kOpenToAll, .tables = "[ckpt]\nrestore_timeout_ms = 1500\n"}.render());
  ASSERT_TRUE(daemon_->start({.env = {"CXLPOOL_RESTORE_TEST_STALL_MS=600000"}}));
  auto conn = Connection::open(daemon_->socket(), "ckpt-test");
  ASSERT_TRUE(conn) << conn.error().message;
  conn_ = std::move(*conn);
  test::CkptTarget target(target_program_, {"loop"});
  ASSERT_TRUE(target.started());
  ASSERT_EQ(run_ctl(daemon_->socket(), {"ckpt", "create", std::to_string(target.pid()), "hang"}).exit_code, 0);
  // The clones' stdin stays open (they wait for commands), their stdout is
  // ours to watch.
  int in[2], out[2];
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  const auto start = std::chrono::steady_clock::now();
  auto restored = restore("hang", proto::CkptPolicy::kMow, 2, {in[0], out[1], out[1]});
  const auto took = std::chrono::steady_clock::now() - start;
  ::close(in[0]);
  ::close(out[1]);
  ASSERT_FALSE(restored) << "restored although the restorer hangs";
  EXPECT_EQ(restored.error().code, ETIMEDOUT) << restored.error().message;
  EXPECT_LT(took, 60s);
  // Every holder of the pipe's write end (the clones, their keepers, the
  // restorer) is gone: EOF, not a timeout.
  pollfd p{out[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1) << "a clone of the timed-out restore still runs";
  char c;
  EXPECT_EQ(::read(out[0], &c, 1), 0);
  ::close(out[0]);
  ::close(in[1]);
  // The worker is free: a checkpoint after it goes through.
  EXPECT_EQ(run_ctl(daemon_->socket(), {"ckpt", "create", std::to_string(target.pid()), "after"}).exit_code, 0);
  EXPECT_EQ(target.stop(), 0);
}

// The C ABI: create from a pidfd, list, restore, remove.
TEST_F(CkptDaemon, ThroughTheCAbi) {
  start();
  test::CkptTarget target(target_program_, {"loop"});
  ASSERT_TRUE(target.started());
  cxlpool_client* client = nullptr;
  ASSERT_EQ(cxlpool_connect(daemon_->socket().c_str(), "ckpt-c", &client), 0) << cxlpool_last_error();
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, target.pid(), 0));
  ASSERT_GE(pidfd, 0);
  cxlpool_ckpt_info info{};
  ASSERT_EQ(cxlpool_ckpt_create(client, pidfd, "c-abi", UINT32_MAX, 0, &info), 0) << cxlpool_last_error();
  ::close(pidfd);
  EXPECT_STREQ(info.name, "c-abi");
  EXPECT_EQ(info.pid, static_cast<uint32_t>(target.pid()));
  EXPECT_GT(info.image_bytes, 0u);
  cxlpool_ckpt_info listed[4];
  EXPECT_EQ(cxlpool_ckpt_list(client, listed, 4), 1);
  EXPECT_EQ(listed[0].region_id, info.region_id);
  ClonePipes pipes;
  const std::vector<int> stdio = pipes.stdio();
  cxlpool_ckpt_clone clone{};
  ASSERT_EQ(cxlpool_ckpt_restore(client, "c-abi", CXLPOOL_CKPT_MOA, 1, stdio.data(), &clone, 1), 1)
      << cxlpool_last_error();
  EXPECT_EQ(clone.ns_pid, target.pid());
  EXPECT_TRUE(pipes.report().contains("digest"));
  ::kill(clone.keeper, SIGKILL);
  EXPECT_EQ(cxlpool_ckpt_remove(client, "c-abi"), 0);
  EXPECT_EQ(cxlpool_ckpt_remove(client, "c-abi"), -ENOENT);
  EXPECT_EQ(cxlpool_ckpt_restore(client, "c-abi", CXLPOOL_CKPT_MOW, 1, nullptr, nullptr, 0), -ENOENT);
  cxlpool_disconnect(client);
  EXPECT_EQ(target.stop(), 0);
}

}  // namespace
}  // namespace cxlpool::integration
