// SPDX-License-Identifier: Apache-2.0
#include "sigframe.hpp"

#include <cstring>

#include <fmt/format.h>

#include "cxlpool/ckpt/restore_plan.hpp"

namespace cxlpool::ckpt {
namespace {

// struct user_regs_struct, by word.
enum UserReg : size_t {
  kR15, kR14, kR13, kR12, kRbp, kRbx, kR11, kR10, kR9, kR8, kRax, kRcx, kRdx, kRsi, kRdi, kOrigRax, kRip, kCs,
  kEflags, kRsp, kSs, kFsBase, kGsBase, kDs, kEs, kFs, kGs, kUserRegWords
};

// The kernel's struct ucontext on x86-64 with its struct sigcontext.
struct KernelStack {
  uint64_t sp;
  int32_t flags, pad;
  uint64_t size;
};
struct KernelSigcontext {
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
  uint16_t cs, gs, fs, ss;
  uint64_t err, trapno, oldmask, cr2, fpstate;
  uint64_t reserved[8];
};
struct KernelUcontext {
  uint64_t flags, link;
  KernelStack stack;
  KernelSigcontext mcontext;
  uint64_t sigmask;
};
static_assert(sizeof(KernelSigcontext) == 256);
static_assert(sizeof(KernelUcontext) == 304);
static_assert(offsetof(KernelUcontext, mcontext) == 40);

constexpr uint64_t kUcFpXstate = 1, kUcSigcontextSs = 2, kUcStrictRestoreSs = 4;
constexpr int32_t kSsDisable = 2;
constexpr uint32_t kFpXstateMagic1 = 0x46505853, kFpXstateMagic2 = 0x46505845;
constexpr size_t kSwBytesOffset = 464, kXstateBvOffset = 512;

}  // namespace

Result<ThreadFrame> build_thread_frame(const ThreadState& t, uint64_t frame_addr, uint64_t xsave_addr) {
  if (t.regs.size() != kUserRegWords * 8)
    return fail(EINVAL, fmt::format("thread {}: {} bytes of registers", t.tid, t.regs.size()));
  if (t.xsave.size() < kXstateBvOffset + 64 || xsave_addr % 64 != 0)
    return fail(EINVAL, fmt::format("thread {}: an xsave area of {} bytes", t.tid, t.xsave.size()));
  std::vector<uint8_t> regs_bytes = t.regs;
  fix_syscall_restart(regs_bytes);
  uint64_t r[kUserRegWords];
  std::memcpy(r, regs_bytes.data(), sizeof r);

  KernelUcontext uc{};
  uc.flags = kUcFpXstate | kUcSigcontextSs | kUcStrictRestoreSs;
  if (t.altstack.sp == 0 && t.altstack.size == 0) {
    uc.stack.flags = kSsDisable;
  } else {
    uc.stack.sp = t.altstack.sp;
    uc.stack.flags = t.altstack.flags;
    uc.stack.size = t.altstack.size;
  }
  KernelSigcontext& sc = uc.mcontext;
  sc.r8 = r[kR8], sc.r9 = r[kR9], sc.r10 = r[kR10], sc.r11 = r[kR11];
  sc.r12 = r[kR12], sc.r13 = r[kR13], sc.r14 = r[kR14], sc.r15 = r[kR15];
  sc.rdi = r[kRdi], sc.rsi = r[kRsi], sc.rbp = r[kRbp], sc.rbx = r[kRbx];
  sc.rdx = r[kRdx], sc.rax = r[kRax], sc.rcx = r[kRcx], sc.rsp = r[kRsp];
  sc.rip = r[kRip], sc.eflags = r[kEflags];
  sc.cs = static_cast<uint16_t>(r[kCs]);
  sc.ss = static_cast<uint16_t>(r[kSs]);
  sc.fpstate = xsave_addr;
  uc.sigmask = t.sigmask;

  ThreadFrame out;
  out.frame.assign(kSigframeBytes, std::byte{0});
  std::memcpy(out.frame.data() + 8, &uc, sizeof uc);
  out.sp = frame_addr + 8;
  out.fs_base = r[kFsBase];
  out.gs_base = r[kGsBase];

  // The xsave image with the software bytes the kernel checks before it
  // restores more than the legacy state: magic1 in the reserved tail of the
  // legacy area, magic2 right after the state.
  const size_t size = t.xsave.size();
  out.xsave.assign(size + 64, std::byte{0});
  std::memcpy(out.xsave.data(), t.xsave.data(), size);
  uint8_t* x = reinterpret_cast<uint8_t*>(out.xsave.data());
  uint32_t magic1, xstate_size;
  std::memcpy(&magic1, x + kSwBytesOffset, 4);
  std::memcpy(&xstate_size, x + kSwBytesOffset + 16, 4);
  if (magic1 != kFpXstateMagic1 || xstate_size > size || xstate_size < kXstateBvOffset + 64) {
    uint64_t xfeatures;
    std::memcpy(&xfeatures, x + kXstateBvOffset, 8);
    xstate_size = static_cast<uint32_t>(size);
    const uint32_t extended = xstate_size + 4;
    std::memcpy(x + kSwBytesOffset, &kFpXstateMagic1, 4);
    std::memcpy(x + kSwBytesOffset + 4, &extended, 4);
    std::memcpy(x + kSwBytesOffset + 8, &xfeatures, 8);
    std::memcpy(x + kSwBytesOffset + 16, &xstate_size, 4);
  }
  std::memcpy(x + xstate_size, &kFpXstateMagic2, 4);
  return out;
}

}  // namespace cxlpool::ckpt
