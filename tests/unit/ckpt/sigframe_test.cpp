// SPDX-License-Identifier: Apache-2.0
// The signal frame a restored thread returns through: registers in the
// kernel's sigcontext order, mask, alternate stack, and the xsave image's
// magic numbers.
#include "sigframe.hpp"

#include <cstring>

#include <gtest/gtest.h>

namespace cxlpool::ckpt {
namespace {

ThreadState thread() {
  ThreadState t;
  t.tid = 77;
  t.regs.resize(27 * 8);
  for (uint64_t i = 0; i < 27; ++i) {
    const uint64_t v = 0x1000 + i;
    std::memcpy(t.regs.data() + i * 8, &v, 8);
  }
  const int64_t orig = -1;
  std::memcpy(t.regs.data() + 15 * 8, &orig, 8);
  t.xsave.assign(832, 0);
  t.sigmask = 0x4242;
  return t;
}

uint64_t word(const std::vector<std::byte>& b, size_t offset) {
  uint64_t v;
  std::memcpy(&v, b.data() + offset, 8);
  return v;
}

TEST(Sigframe, RegistersGoWhereSigreturnReadsThem) {
  auto f = build_thread_frame(thread(), 0x10000, 0x20000);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->sp, 0x10008u);
  EXPECT_EQ(f->frame.size(), kSigframeBytes);
  const size_t uc = 8, sc = uc + 40;
  EXPECT_EQ(word(f->frame, uc), 7u);                    // UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS
  EXPECT_EQ(word(f->frame, uc + 16 + 8) & 0xffffffff, 2u);  // no alternate stack: SS_DISABLE
  EXPECT_EQ(word(f->frame, sc + 0 * 8), 0x1000u + 9);   // r8
  EXPECT_EQ(word(f->frame, sc + 7 * 8), 0x1000u + 0);   // r15
  EXPECT_EQ(word(f->frame, sc + 8 * 8), 0x1000u + 14);  // rdi
  EXPECT_EQ(word(f->frame, sc + 13 * 8), 0x1000u + 10); // rax
  EXPECT_EQ(word(f->frame, sc + 15 * 8), 0x1000u + 19); // rsp
  EXPECT_EQ(word(f->frame, sc + 16 * 8), 0x1000u + 16); // rip
  EXPECT_EQ(word(f->frame, sc + 17 * 8), 0x1000u + 18); // eflags
  EXPECT_EQ(word(f->frame, sc + 23 * 8), 0x20000u);     // fpstate
  EXPECT_EQ(word(f->frame, uc + 40 + 256), 0x4242u);    // the mask
  EXPECT_EQ(f->fs_base, 0x1000u + 21);
  EXPECT_EQ(f->gs_base, 0x1000u + 22);
}

TEST(Sigframe, XsaveCarriesBothMagics) {
  auto f = build_thread_frame(thread(), 0x10000, 0x20000);
  ASSERT_TRUE(f);
  uint32_t magic1, size, magic2;
  std::memcpy(&magic1, f->xsave.data() + 464, 4);
  std::memcpy(&size, f->xsave.data() + 464 + 16, 4);
  std::memcpy(&magic2, f->xsave.data() + size, 4);
  EXPECT_EQ(magic1, 0x46505853u);
  EXPECT_EQ(size, 832u);
  EXPECT_EQ(magic2, 0x46505845u);
}

TEST(Sigframe, RefusesBadInput) {
  ThreadState t = thread();
  EXPECT_FALSE(build_thread_frame(t, 0x10000, 0x20010));  // unaligned xsave
  t.regs.resize(8);
  EXPECT_FALSE(build_thread_frame(t, 0x10000, 0x20000));
}

}  // namespace
}  // namespace cxlpool::ckpt
