// SPDX-License-Identifier: Apache-2.0
// Checkpoints of libcxlpool clients through a real cxlpoold (as root): a
// client holding a named region and its connection is checkpointed and
// restored; the clone has a new connection under its own credentials, the
// region mapped MAP_SHARED at the same address and descriptor, and goes on
// calling the daemon; a leased region comes back with its bytes as a new
// lease under the id the library holds. What a clone cannot get back is
// refused at checkpoint, naming it.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "clone_pipes.hpp"
#include "ctl_runner.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/cxlpool.h"
#include "daemon_process.hpp"
#include "support/ckpt_target_process.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

constexpr uint64_t kRegionBytes = 64 << 10;

class CkptClient : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "checkpoints through the daemon need root (ptrace, clone3 set_tid)";
    program_ = test::ckpt_target_program("CXLPOOL_CKPT_CLIENT_TARGET");
    if (program_.empty()) GTEST_SKIP() << "CXLPOOL_CKPT_CLIENT_TARGET not set (a sanitized build has no client target)";
    daemon_ = std::make_unique<DaemonProcess>(TestConfig{.daemon = kOpenToAll}.render());
    ASSERT_TRUE(daemon_->start());
    ASSERT_EQ(cxlpool_connect(daemon_->socket().c_str(), "ckpt-client-test", &client_), 0) << cxlpool_last_error();
  }
  void TearDown() override {
    if (region_ != nullptr) cxlpool_region_free(region_);
    if (client_ != nullptr) cxlpool_disconnect(client_);
  }

  // The test's own writable mapping of the named region "weights".
  uint64_t* make_weights() {
    if (cxlpool_named_create(client_, "weights", 0, kRegionBytes, 0644, 0, &region_) < 0) return nullptr;
    void* addr = nullptr;
    if (cxlpool_region_map(region_, &addr) < 0) return nullptr;
    return static_cast<uint64_t*>(addr);
  }

  ProgramResult create(pid_t pid, const std::string& name) {
    return run_ctl(daemon_->socket(), {"ckpt", "create", std::to_string(pid), name});
  }

  // One clone with `pipes` as its stdio; its keeper is killed at the end.
  Result<cxlpool_ckpt_clone> restore(const std::string& name, cxlpool_ckpt_policy policy, ClonePipes& pipes) {
    cxlpool_ckpt_clone clone{};
    const std::vector<int> stdio = pipes.stdio();
    const int n = cxlpool_ckpt_restore(client_, name.c_str(), policy, 1, stdio.data(), &clone, 1);
    if (n != 1) return fail(-n, cxlpool_last_error());
    keepers_.push_back(clone.keeper);
    return clone;
  }

  // Regions leased by clients (cxlpoolctl regions; a checkpoint's image is
  // a region of no client).
  size_t leased_regions() {
    size_t n = 0;
    for (const auto& r : run_ctl_json(daemon_->socket(), {"regions"}))
      n += r.value("kind", "") == "leased" && r.value("client", 0u) != 0;
    return n;
  }

  std::string program_;
  std::unique_ptr<DaemonProcess> daemon_;
  cxlpool_client* client_ = nullptr;
  cxlpool_region* region_ = nullptr;
  std::vector<pid_t> keepers_;

 public:
  ~CkptClient() override {
    for (pid_t k : keepers_) ::kill(k, SIGKILL);
  }
};

TEST_F(CkptClient, NamedRegionAndConnectionComeBackUnderEachPolicy) {
  uint64_t* weights = make_weights();
  ASSERT_NE(weights, nullptr) << cxlpool_last_error();
  weights[0] = 42;
  test::CkptTarget target(program_, {daemon_->socket(), "named", "weights"});
  ASSERT_TRUE(target.started());
  auto before = target.report();
  ASSERT_TRUE(before);
  ASSERT_EQ(before->at("call"), "ok");
  ASSERT_EQ(before->at("word0"), "42");
  const ProgramResult made = create(target.pid(), "client");
  ASSERT_EQ(made.exit_code, 0) << made.err << daemon_->log();

  // The region is shared: a clone sees what the daemon's copy holds now,
  // not what it held at the checkpoint.
  weights[0] = 43;
  uint64_t poke = 100;
  for (auto policy : {CXLPOOL_CKPT_MOW, CXLPOOL_CKPT_MOA, CXLPOOL_CKPT_HYBRID}) {
    SCOPED_TRACE(static_cast<int>(policy));
    ClonePipes pipes;
    auto reply = restore("client", policy, pipes);
    ASSERT_TRUE(reply) << reply.error().message << daemon_->log();
    const auto r = pipes.report();
    ASSERT_TRUE(r.contains("call")) << "the clone did not answer" << daemon_->log();
    EXPECT_EQ(r.at("pid"), before->at("pid"));
    EXPECT_EQ(r.at("addr"), before->at("addr")) << "the region is not at its address";
    EXPECT_EQ(r.at("region_fd"), before->at("region_fd"));
    EXPECT_EQ(r.at("region_id"), before->at("region_id")) << "a named region keeps its id";
    EXPECT_EQ(r.at("word0"), "43");
    EXPECT_EQ(r.at("call"), "ok") << "the clone's connection to the daemon does not work";
    // The clone's writes reach the region everyone maps.
    ++poke;
    pipes.ask("poke " + std::to_string(poke));
    EXPECT_EQ(weights[1], poke);
    pipes.exit_clone();
  }
  // The original kept its own connection throughout.
  auto after = target.report();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->at("call"), "ok");
  EXPECT_EQ(after->at("word1"), std::to_string(poke));
  EXPECT_EQ(target.stop(), 0);
}

// A region opened read-only comes back read-only: the clone's connection
// asks for no more than the process held.
TEST_F(CkptClient, ReadOnlyRegionStaysReadOnly) {
  uint64_t* weights = make_weights();
  ASSERT_NE(weights, nullptr) << cxlpool_last_error();
  weights[0] = 7;
  test::CkptTarget target(program_, {daemon_->socket(), "named-ro", "weights"});
  ASSERT_TRUE(target.started());
  ASSERT_EQ(create(target.pid(), "ro").exit_code, 0) << daemon_->log();
  ClonePipes pipes;
  auto reply = restore("ro", CXLPOOL_CKPT_MOW, pipes);
  ASSERT_TRUE(reply) << reply.error().message;
  const auto r = pipes.report();
  ASSERT_TRUE(r.contains("word0")) << daemon_->log();
  EXPECT_EQ(r.at("word0"), "7");
  // The clone's descriptor of the region is read-only, as the original's.
  const pid_t clone = static_cast<pid_t>(reply->pid);
  const std::string fdinfo = "/proc/" + std::to_string(clone) + "/fdinfo/" + r.at("region_fd");
  FILE* f = std::fopen(fdinfo.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[128];
  unsigned flags = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) std::sscanf(line, "flags: %o", &flags);
  std::fclose(f);
  EXPECT_EQ(flags & O_ACCMODE, static_cast<unsigned>(O_RDONLY));
  pipes.exit_clone();
  EXPECT_EQ(target.stop(), 0);
}

// A lease belongs to the connection that allocated it: its bytes travel in
// the image and the clone's new connection leases a region like it, which
// the library goes on using under the id it holds.
TEST_F(CkptClient, LeasedRegionComesBackWithItsBytesUnderEachPolicy) {
  test::CkptTarget target(program_, {daemon_->socket(), "leased"});
  ASSERT_TRUE(target.started());
  auto before = target.report();
  ASSERT_TRUE(before);
  ASSERT_EQ(before->at("word0"), "1234");
  const ProgramResult made = create(target.pid(), "leased");
  ASSERT_EQ(made.exit_code, 0) << made.err << daemon_->log();
  const size_t leases = leased_regions();
  ASSERT_EQ(leases, 1u) << "the original's lease";
  for (auto policy : {CXLPOOL_CKPT_MOW, CXLPOOL_CKPT_MOA, CXLPOOL_CKPT_HYBRID}) {
    SCOPED_TRACE(static_cast<int>(policy));
    ClonePipes pipes;
    auto reply = restore("leased", policy, pipes);
    ASSERT_TRUE(reply) << reply.error().message << daemon_->log();
    const auto r = pipes.report();
    ASSERT_TRUE(r.contains("call")) << "the clone did not answer" << daemon_->log();
    EXPECT_EQ(r.at("pid"), before->at("pid"));
    EXPECT_EQ(r.at("addr"), before->at("addr")) << "the lease is not at its address";
    EXPECT_EQ(r.at("region_fd"), before->at("region_fd"));
    EXPECT_EQ(r.at("region_id"), before->at("region_id")) << "the library holds the recorded id";
    EXPECT_EQ(r.at("word0"), "1234");
    EXPECT_EQ(r.at("far"), "4321") << "the lease's later page";
    EXPECT_EQ(r.at("call"), "ok");
    EXPECT_EQ(leased_regions(), leases + 1) << "the clone's connection holds a lease of its own";
    // Its own: what the clone writes, the original does not see.
    pipes.ask("poke 77");
    EXPECT_EQ(pipes.report().at("word1"), "77");
    auto original = target.report();
    ASSERT_TRUE(original);
    EXPECT_EQ(original->at("word1"), "0");
    // The library frees it by the recorded id; the daemon frees the lease.
    EXPECT_EQ(pipes.ask("free")["free"], "ok");
    EXPECT_EQ(leased_regions(), leases);
    pipes.exit_clone();
  }
  EXPECT_EQ(target.stop(), 0);
}

// A lease another process maps too (a forked child) would stop being
// shared with it in a clone: refused, naming the other process, and the
// process runs on.
TEST_F(CkptClient, LeaseMappedByAnotherProcessIsRefused) {
  test::CkptTarget target(program_, {daemon_->socket(), "leased-shared"});
  ASSERT_TRUE(target.started());
  const ProgramResult made = create(target.pid(), "shared-lease");
  EXPECT_EQ(made.exit_code, 1);
  EXPECT_NE(made.err.find("leased cxlpool region"), std::string::npos) << made.err;
  EXPECT_NE(made.err.find("is mapped by process " + target.setup().at("child")), std::string::npos) << made.err;
  auto r = target.report();
  ASSERT_TRUE(r) << "the target did not survive a refused checkpoint";
  EXPECT_EQ(r->at("word0"), "1234");
  EXPECT_EQ(target.stop(), 0);
}

// A named region whose name is gone cannot be opened by a clone: refused
// at checkpoint, naming it.
TEST_F(CkptClient, UnlinkedRegionIsRefusedWithItsName) {
  ASSERT_NE(make_weights(), nullptr) << cxlpool_last_error();
  test::CkptTarget target(program_, {daemon_->socket(), "named", "weights"});
  ASSERT_TRUE(target.started());
  ASSERT_EQ(cxlpool_named_unlink(client_, "weights"), 0) << cxlpool_last_error();
  const ProgramResult made = create(target.pid(), "unlinked");
  EXPECT_EQ(made.exit_code, 1);
  EXPECT_NE(made.err.find("('weights'), whose name was unlinked"), std::string::npos) << made.err;
  EXPECT_TRUE(target.report()) << "the target did not survive a refused checkpoint";
  EXPECT_EQ(target.stop(), 0);
}

// The stderr a failed restore of `name` wrote (the restorer's message).
std::string failed_restore_message(cxlpool_client* client, const std::string& name) {
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) return "pipe failed";
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const int stdio[3] = {null_fd, null_fd, err[1]};
  const int n = cxlpool_ckpt_restore(client, name.c_str(), CXLPOOL_CKPT_MOW, 1, stdio, nullptr, 0);
  ::close(err[1]);
  ::close(null_fd);
  std::string message(4096, '\0');
  const ssize_t got = n < 0 ? ::read(err[0], message.data(), message.size()) : 0;
  ::close(err[0]);
  message.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return n < 0 ? message : "restored";
}

// A restore opens the region by name again: once the name is gone, or
// names another region, the restore fails and says which region.
TEST_F(CkptClient, RestoreFailsWhenTheNamedRegionIsGoneOrAnother) {
  ASSERT_NE(make_weights(), nullptr) << cxlpool_last_error();
  test::CkptTarget target(program_, {daemon_->socket(), "named", "weights"});
  ASSERT_TRUE(target.started());
  ASSERT_EQ(create(target.pid(), "gone").exit_code, 0) << daemon_->log();
  ASSERT_EQ(cxlpool_named_unlink(client_, "weights"), 0) << cxlpool_last_error();
  std::string message = failed_restore_message(client_, "gone");
  EXPECT_NE(message.find("opening cxlpool region 'weights' for the clone"), std::string::npos) << message;
  cxlpool_region* other = nullptr;
  ASSERT_EQ(cxlpool_named_create(client_, "weights", 0, kRegionBytes, 0666, 0, &other), 0) << cxlpool_last_error();
  message = failed_restore_message(client_, "gone");
  EXPECT_NE(message.find("the name is another region now"), std::string::npos) << message;
  cxlpool_region_free(other);
  EXPECT_EQ(target.stop(), 0);
}

// The clone's connection is made with the uid the checkpoint recorded, not
// the restorer's root: a process of uid 65534 that read a region another
// uid owns gets it back only while that uid may open it. Once the name is
// a region only its owner may open, the restore is refused for permission
// (root would have been let in and refused later as "another region").
TEST_F(CkptClient, TheClonesUidIsChecked) {
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "needs setpriv (util-linux) to run the client as 65534";
  uint64_t* weights = make_weights();
  ASSERT_NE(weights, nullptr) << cxlpool_last_error();
  weights[0] = 5;
  test::CkptTarget target("/usr/bin/setpriv", {"--reuid=65534", "--regid=65534", "--clear-groups", program_,
                                               daemon_->socket(), "named-ro", "weights"});
  ASSERT_TRUE(target.started()) << daemon_->log();
  const ProgramResult made = create(target.pid(), "nobody");
  ASSERT_EQ(made.exit_code, 0) << made.err << daemon_->log();
  {
    ClonePipes pipes;
    auto clone = restore("nobody", CXLPOOL_CKPT_MOW, pipes);
    ASSERT_TRUE(clone) << clone.error().message;
    const auto r = pipes.report();
    ASSERT_TRUE(r.contains("word0")) << daemon_->log();
    EXPECT_EQ(r.at("word0"), "5");
    EXPECT_EQ(r.at("call"), "ok");
    // The daemon sees the clone's connection as uid 65534.
    const auto clients = run_ctl_json(daemon_->socket(), {"clients"});
    bool seen = false;
    for (const auto& c : clients) seen = seen || (c.value("pid", 0u) == static_cast<uint32_t>(clone->pid) &&
                                                  c.value("uid", 0u) == 65534u);
    EXPECT_TRUE(seen) << clients.dump();
    pipes.exit_clone();
  }
  ASSERT_EQ(cxlpool_named_unlink(client_, "weights"), 0) << cxlpool_last_error();
  cxlpool_region* mine = nullptr;
  ASSERT_EQ(cxlpool_named_create(client_, "weights", 0, kRegionBytes, 0600, 0, &mine), 0) << cxlpool_last_error();
  const std::string message = failed_restore_message(client_, "nobody");
  EXPECT_NE(message.find("opening cxlpool region 'weights' for the clone"), std::string::npos) << message;
  EXPECT_NE(message.find("denies"), std::string::npos) << message;
  cxlpool_region_free(mine);
  EXPECT_EQ(target.stop(), 0);
}

}  // namespace
}  // namespace cxlpool::integration
