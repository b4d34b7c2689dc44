// SPDX-License-Identifier: Apache-2.0
// The rule that decides whose processes a client may checkpoint: the
// /proc/PID/status parser and each reason for a refusal.
#include <gtest/gtest.h>
#include <unistd.h>

#include "ckpt/trace_permission.hpp"

namespace cxlpool::daemon {
namespace {

constexpr const char* kStatus =
    "Name:\tworker\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t42\nPid:\t42\n"
    "Uid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n"
    "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n";

TEST(TracePermission, ParsesTheStatusLines) {
  auto c = parse_process_creds(kStatus);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->uid[0], 1000u);
  EXPECT_EQ(c->uid[2], 1000u);
  EXPECT_EQ(c->gid[1], 100u);
  EXPECT_EQ(c->cap_permitted, 0u);
  auto caps = parse_process_creds("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n");
  ASSERT_TRUE(caps);
  EXPECT_EQ(caps->cap_effective, 0x000001ffffffffffull);
  EXPECT_FALSE(parse_process_creds("Uid:\t1000\t1000\nGid:\t1\t1\t1\t1\n"));
  EXPECT_FALSE(parse_process_creds(""));
}

TEST(TracePermission, EachReasonRefuses) {
  const ProcessCreds same = *parse_process_creds(kStatus);
  EXPECT_EQ(trace_refusal(1000, 100, 0, same, true), "");
  EXPECT_NE(trace_refusal(1001, 100, 0, same, true).find("uids"), std::string::npos);
  EXPECT_NE(trace_refusal(1000, 101, 0, same, true).find("gids"), std::string::npos);
  ProcessCreds setuid_saved = same;
  setuid_saved.uid[2] = 0;  // a set-user-ID program that kept root as its saved uid
  EXPECT_NE(trace_refusal(1000, 100, 0, setuid_saved, true), "");
  EXPECT_NE(trace_refusal(1000, 100, 0, same, false).find("dumpable"), std::string::npos);
  ProcessCreds privileged = same;
  privileged.cap_permitted = 1ull << 21;  // CAP_SYS_ADMIN
  EXPECT_NE(trace_refusal(1000, 100, 0, privileged, true).find("capabilities"), std::string::npos);
  EXPECT_EQ(trace_refusal(1000, 100, 1ull << 21, privileged, true), "");
}

TEST(TracePermission, OwnProcessAndPidfd) {
  auto self = read_process_creds(::getpid());
  ASSERT_TRUE(self) << self.error().message;
  EXPECT_EQ(self->uid[1], ::geteuid());
  auto dumpable = process_dumpable(::getpid(), ::geteuid());
  ASSERT_TRUE(dumpable);
  EXPECT_TRUE(*dumpable);
  EXPECT_EQ(pidfd_pid(0).error().code, EBADF);  // stdin is no pidfd
}

}  // namespace
}  // namespace cxlpool::daemon
