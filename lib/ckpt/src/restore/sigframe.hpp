// SPDX-License-Identifier: Apache-2.0
// The x86-64 signal frame through which a restored thread returns into the
// target: rt_sigreturn loads every register, the signal mask, the
// alternate stack and the extended FPU state from it in one step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

// Bytes a thread's frame takes: return address slot, ucontext, siginfo.
inline constexpr size_t kSigframeBytes = 8 + 304 + 128;

struct ThreadFrame {
  std::vector<std::byte> frame;  // kSigframeBytes, to place at frame_addr
  std::vector<std::byte> xsave;  // to place at xsave_addr (64-byte aligned)
  uint64_t sp = 0;               // rsp for rt_sigreturn: frame_addr + 8
  uint64_t fs_base = 0, gs_base = 0;
};

// Builds thread `t`'s frame for addresses frame_addr and xsave_addr (where
// the caller will copy them), with the system call restart the kernel
// would have done. EINVAL: registers or xsave area of the wrong size;
// xsave_addr not 64-byte aligned.
Result<ThreadFrame> build_thread_frame(const ThreadState& t, uint64_t frame_addr, uint64_t xsave_addr);

}  // namespace cxlpool::ckpt
