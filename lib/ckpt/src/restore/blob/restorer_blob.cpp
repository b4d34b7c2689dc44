// SPDX-License-Identifier: Apache-2.0
// The restorer's final stage: runs from a copy of its own code inside the
// restorer's area, after which no libc, no heap and no other mapping of the
// restorer exists. It builds the target's address space, process state and
// threads, then each thread returns into the target with rt_sigreturn.
//
// Built freestanding (meson.build): no stack protector, no sanitizers, no
// jump tables, no calls the compiler could turn into memcpy/memset, nothing
// in .rodata or .data: every function lives in the one section the C++
// stage copies, and reaches the rest only pc-relative.
#include "blob_abi.hpp"

#include <asm/unistd.h>

#include "cxlpool/ckpt/uffd_raw.hpp"

#define BLOB __attribute__((section("cxlpool_restorer"), used))
#define BLOB_INLINE static inline __attribute__((always_inline))

namespace cxlpool::ckpt::blob {
namespace {

BLOB_INLINE long sys0(long n) {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(n) : "rcx", "r11", "memory");
  return r;
}
BLOB_INLINE long sys1(long n, long a) {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a) : "rcx", "r11", "memory");
  return r;
}
BLOB_INLINE long sys2(long n, long a, long b) {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b) : "rcx", "r11", "memory");
  return r;
}
BLOB_INLINE long sys3(long n, long a, long b, long c) {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}
BLOB_INLINE long sys4(long n, long a, long b, long c, long d) {
  long r;
  register long r10 asm("r10") = d;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return r;
}
BLOB_INLINE long sys5(long n, long a, long b, long c, long d, long e) {
  long r;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
  return r;
}
BLOB_INLINE long sys6(long n, long a, long b, long c, long d, long e, long f) {
  long r;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  register long r9 asm("r9") = f;
  asm volatile("syscall"
               : "=a"(r)
               : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return r;
}

// Values of the kernel ABI the final stage needs (no libc headers here).
constexpr long kMapFixed = 0x10;
constexpr long kMremapMaymove = 1, kMremapFixed = 2;
constexpr long kPrSetName = 15, kPrSetMm = 35, kPrSetMmMap = 14, kPrSetNoNewPrivs = 38;
constexpr long kArchSetFs = 0x1002, kArchSetGs = 0x1001;
constexpr long kRseqUnregister = 1;
constexpr long kCloneThreadFlags = 0x00000100 | 0x00000200 | 0x00000400 | 0x00000800 | 0x00010000 | 0x00040000;
constexpr long kFutexWait = 0, kFutexWake = 1;
constexpr long kEintr = 4;

BLOB void fail(Args* a, Failure what, long result, uint64_t index) {
  Status s;
  s.failure = static_cast<uint32_t>(what);
  s.error = static_cast<int32_t>(-result);
  s.step = index;
  sys3(__NR_write, a->status_fd, reinterpret_cast<long>(&s), sizeof s);
  for (;;) sys1(__NR_exit_group, 127);
}

BLOB void check(Args* a, long result, Failure what, uint64_t index) {
  if (result < 0 && result > -4096) fail(a, what, result, index);
}

// Moves the restorer's [vdso]/[vvar] to where the target had them: first all
// into the park (the targets may overlap the sources), then to the targets,
// keeping their distances, which the vDSO's code relies on.
BLOB void move_specials(Args* a) {
  // The park holds the whole block in its original order: offsets from the
  // lowest source.
  uint64_t low = ~0ull;
  for (uint32_t i = 0; i < a->move_count; ++i)
    if (a->moves[i].from < low) low = a->moves[i].from;
  for (uint32_t i = 0; i < a->move_count; ++i) {
    Move& m = a->moves[i];
    const long r = sys5(__NR_mremap, m.from, m.len, m.len, kMremapMaymove | kMremapFixed, a->park + (m.from - low));
    check(a, r, Failure::kMoveSpecial, i);
  }
  for (uint32_t i = 0; i < a->move_count; ++i) {
    Move& m = a->moves[i];
    const long r = sys5(__NR_mremap, a->park + (m.from - low), m.len, m.len, kMremapMaymove | kMremapFixed, m.to);
    check(a, r, Failure::kMoveSpecial, i);
  }
}

BLOB void copy_from(Args* a, const Step& s, uint64_t index) {
  uint64_t done = 0;
  while (done < s.len) {
    const long r = sys4(__NR_pread64, s.fd, static_cast<long>(s.addr + done), static_cast<long>(s.len - done),
                        static_cast<long>(s.offset + done));
    if (r == -kEintr) continue;
    if (r == 0) fail(a, Failure::kCopy, -5, index);
    check(a, r, Failure::kCopy, index);
    done += static_cast<uint64_t>(r);
  }
}

struct Sys {
  long operator()(long n, long a, long b, long c) const { return sys3(n, a, b, c); }
};

// The userfaultfd goes to the keeper, which fills the registered ranges. The
// clone keeps its own copy open: were the keeper's the last, its death would
// turn the clone's next missing faults into zero pages instead of a wait
// (the keeper's death kills the namespace right after).
BLOB void register_uffd(Args* a) {
  bool any = false;
  for (uint32_t i = 0; i < a->step_count; ++i)
    if (reinterpret_cast<Step*>(a->steps)[i].kind == StepKind::kUffd) any = true;
  if (!any) return;
  const long uffd = sys1(__NR_userfaultfd, uffd_raw::kOpenFlags);
  check(a, uffd, Failure::kUffd, 0);
  check(a, uffd_raw::api(Sys{}, static_cast<int>(uffd)), Failure::kUffd, 0);
  for (uint32_t i = 0; i < a->step_count; ++i) {
    const Step& s = reinterpret_cast<Step*>(a->steps)[i];
    if (s.kind != StepKind::kUffd) continue;
    check(a, uffd_raw::register_missing(Sys{}, static_cast<int>(uffd), s.addr, s.len), Failure::kUffd, i);
  }
  check(a, uffd_raw::send_fd(Sys{}, a->uffd_socket, static_cast<int>(uffd), static_cast<unsigned long long>(a->pid)),
        Failure::kUffdSend, 0);
  sys1(__NR_close, a->uffd_socket);
  a->uffd_keep = static_cast<int32_t>(uffd);
}

BLOB void build_memory(Args* a) {
  const Range* unmaps = reinterpret_cast<const Range*>(a->unmaps);
  for (uint32_t i = 0; i < a->unmap_count; ++i)
    check(a, sys2(__NR_munmap, static_cast<long>(unmaps[i].start), static_cast<long>(unmaps[i].end - unmaps[i].start)),
          Failure::kUnmap, i);
  Step* steps = reinterpret_cast<Step*>(a->steps);
  for (uint32_t i = 0; i < a->step_count; ++i) {
    const Step& s = steps[i];
    if (s.kind == StepKind::kMap) {
      const long r = sys6(__NR_mmap, static_cast<long>(s.addr), static_cast<long>(s.len), s.prot, s.flags | kMapFixed,
                          s.fd, static_cast<long>(s.offset));
      check(a, r, Failure::kMap, i);
      if (static_cast<uint64_t>(r) != s.addr) fail(a, Failure::kMap, -17, i);
    } else if (s.kind == StepKind::kCopy) {
      copy_from(a, s, i);
    } else if (s.kind == StepKind::kProtect) {
      check(a, sys3(__NR_mprotect, static_cast<long>(s.addr), static_cast<long>(s.len), s.prot), Failure::kProtect, i);
    } else if (s.kind == StepKind::kAdvise) {
      check(a, sys3(__NR_madvise, static_cast<long>(s.addr), static_cast<long>(s.len), s.prot), Failure::kAdvise, i);
    }
  }
  register_uffd(a);
}

BLOB void set_process_state(Args* a) {
  check(a, sys5(__NR_prctl, kPrSetMm, kPrSetMmMap, reinterpret_cast<long>(&a->mm), sizeof a->mm, 0), Failure::kMmMap,
        0);
  check(a, sys1(__NR_personality, a->personality), Failure::kPersonality, 0);
  for (uint32_t sig = 1; sig <= 64; ++sig) {
    if (sig == 9 || sig == 19 || sig == 32 || sig == 33) continue;  // SIGKILL, SIGSTOP, glibc's own
    check(a, sys4(__NR_rt_sigaction, sig, reinterpret_cast<long>(&a->sigactions[sig - 1]), 0, 8),
          Failure::kSigaction, sig);
  }
  for (uint32_t r = 0; r < 16; ++r)
    check(a, sys4(__NR_prlimit64, 0, r, reinterpret_cast<long>(&a->rlimits[r]), 0), Failure::kRlimit, r);
  for (uint32_t t = 0; t < 3; ++t)
    check(a, sys3(__NR_setitimer, t, reinterpret_cast<long>(&a->itimers[t]), 0), Failure::kItimer, t);
  const uint8_t* info = reinterpret_cast<const uint8_t*>(a->shared_pending);
  for (uint32_t i = 0; i < a->shared_pending_count; ++i) {
    const int32_t sig = *reinterpret_cast<const int32_t*>(info + 128 * i);
    check(a, sys3(__NR_rt_sigqueueinfo, a->pid, sig, reinterpret_cast<long>(info + 128 * i)), Failure::kSigqueue, i);
  }
}

BLOB void set_creds(Args* a) {
  const Creds& c = a->creds;
  check(a, sys2(__NR_setgroups, c.group_count, static_cast<long>(c.groups)), Failure::kCreds, 0);
  check(a, sys3(__NR_setresgid, c.gid[0], c.gid[1], c.gid[2]), Failure::kCreds, 1);
  check(a, sys3(__NR_setresuid, c.uid[0], c.uid[1], c.uid[2]), Failure::kCreds, 2);
  struct {
    uint32_t version;
    int32_t pid;
  } header;
  header.version = 0x20080522;  // _LINUX_CAPABILITY_VERSION_3
  header.pid = 0;
  struct {
    uint32_t effective, permitted, inheritable;
  } data[2];
  data[0].effective = static_cast<uint32_t>(c.cap_effective);
  data[0].permitted = static_cast<uint32_t>(c.cap_permitted);
  data[0].inheritable = static_cast<uint32_t>(c.cap_inheritable);
  data[1].effective = static_cast<uint32_t>(c.cap_effective >> 32);
  data[1].permitted = static_cast<uint32_t>(c.cap_permitted >> 32);
  data[1].inheritable = static_cast<uint32_t>(c.cap_inheritable >> 32);
  check(a, sys2(__NR_capset, reinterpret_cast<long>(&header), reinterpret_cast<long>(data)), Failure::kCreds, 3);
  if (c.no_new_privs) check(a, sys5(__NR_prctl, kPrSetNoNewPrivs, 1, 0, 0, 0), Failure::kCreds, 4);
}

// What every thread does for itself, the leader included, then it returns
// into the target through its prepared signal frame.
BLOB void finish_thread(Args* a, uint32_t index) {
  Thread& t = reinterpret_cast<Thread*>(a->threads)[index];
  check(a, sys2(__NR_arch_prctl, kArchSetFs, static_cast<long>(t.fs_base)), Failure::kFsBase, index);
  if (t.gs_base) check(a, sys2(__NR_arch_prctl, kArchSetGs, static_cast<long>(t.gs_base)), Failure::kFsBase, index);
  if (t.rseq_addr)
    check(a, sys4(__NR_rseq, static_cast<long>(t.rseq_addr), t.rseq_len, 0, t.rseq_sig), Failure::kRseq, index);
  sys1(__NR_set_tid_address, static_cast<long>(t.clear_child_tid));
  // A created thread starts with its creator's name.
  check(a, sys2(__NR_prctl, kPrSetName, reinterpret_cast<long>(t.name)), Failure::kThreadName, index);
  const uint8_t* info = reinterpret_cast<const uint8_t*>(t.pending);
  for (uint32_t i = 0; i < t.pending_count; ++i) {
    const int32_t sig = *reinterpret_cast<const int32_t*>(info + 128 * i);
    check(a, sys4(__NR_rt_tgsigqueueinfo, a->pid, t.tid, sig, reinterpret_cast<long>(info + 128 * i)),
          Failure::kSigqueue, index);
  }
  // Credentials last: nothing after this needs privilege.
  set_creds(a);
  __atomic_fetch_add(&a->ready, 1, __ATOMIC_SEQ_CST);
  sys3(__NR_futex, reinterpret_cast<long>(&a->ready), kFutexWake, 1);
  if (index == 0) {
    for (;;) {
      const uint32_t ready = __atomic_load_n(&a->ready, __ATOMIC_SEQ_CST);
      if (ready == a->thread_count) break;
      sys4(__NR_futex, reinterpret_cast<long>(&a->ready), kFutexWait, ready, 0);
    }
    Status s;
    s.failure = 0;
    s.error = 0;
    s.step = 0;
    if (sys3(__NR_write, a->status_fd, reinterpret_cast<long>(&s), sizeof s) != sizeof s)
      fail(a, Failure::kStatus, -5, 0);
    if (a->uffd_keep >= a->close_from) {
      sys3(__NR_close_range, a->close_from, a->uffd_keep - 1, 0);
      sys3(__NR_close_range, a->uffd_keep + 1, ~0u, 0);
    } else {
      sys3(__NR_close_range, a->close_from, ~0u, 0);
    }
    __atomic_store_n(&a->go, 1, __ATOMIC_SEQ_CST);
    sys3(__NR_futex, reinterpret_cast<long>(&a->go), kFutexWake, 0x7fffffff);
  } else {
    while (__atomic_load_n(&a->go, __ATOMIC_SEQ_CST) == 0)
      sys4(__NR_futex, reinterpret_cast<long>(&a->go), kFutexWait, 0, 0);
  }
  asm volatile(
      "mov %0, %%rsp\n\t"
      "mov $15, %%eax\n\t"  // rt_sigreturn
      "syscall\n\t"
      "ud2\n\t"
      :
      : "r"(t.frame_sp)
      : "memory");
  __builtin_unreachable();
}

// A created thread starts here, on its own stack, with its index.
BLOB __attribute__((noreturn)) void restorer_thread(Args* a, uint64_t index) {
  finish_thread(a, static_cast<uint32_t>(index));
  __builtin_unreachable();
}

BLOB void create_threads(Args* a) {
  Thread* threads = reinterpret_cast<Thread*>(a->threads);
  for (uint32_t i = 1; i < a->thread_count; ++i) {
    // The same tid at every level asked for (set_tid[0] is the innermost).
    int32_t tid[2] = {threads[i].tid, threads[i].tid};
    struct {
      uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
    } ca;
    ca.flags = kCloneThreadFlags;
    ca.pidfd = 0;
    ca.child_tid = 0;
    ca.parent_tid = 0;
    ca.exit_signal = 0;
    ca.stack = threads[i].stack_top - 4096 * 3;
    ca.stack_size = 4096 * 3;
    ca.tls = 0;
    ca.set_tid = reinterpret_cast<uint64_t>(&tid[0]);
    ca.set_tid_size = a->tid_levels;
    ca.cgroup = 0;
    long r;
    // The child must not touch this frame: it leaves the asm straight into
    // restorer_thread on its own stack.
    register long r12 asm("r12") = reinterpret_cast<long>(a);
    register long r13 asm("r13") = i;
    register long r14 asm("r14") = reinterpret_cast<long>(&restorer_thread);
    asm volatile(
        "syscall\n\t"
        "test %%rax, %%rax\n\t"
        "jnz 1f\n\t"
        "mov %%r12, %%rdi\n\t"
        "mov %%r13, %%rsi\n\t"
        "xor %%ebp, %%ebp\n\t"
        "and $-16, %%rsp\n\t"
        "call *%%r14\n\t"
        "ud2\n\t"
        "1:\n\t"
        : "=a"(r)
        : "a"(static_cast<long>(__NR_clone3)), "D"(&ca), "S"(sizeof ca), "r"(r12), "r"(r13), "r"(r14)
        : "rcx", "r11", "memory");
    check(a, r, Failure::kCloneThread, i);
  }
}

}  // namespace

extern "C" BLOB void cxlpool_restorer_main(Args* a) {
  if (a->own_rseq_addr) {
    // glibc registered the restorer thread's rseq area, which is about to be
    // unmapped; the target's is registered per thread at the end.
    check(a, sys4(__NR_rseq, static_cast<long>(a->own_rseq_addr), a->own_rseq_len, kRseqUnregister, a->own_rseq_sig),
          Failure::kRseq, ~0ull);
  }
  move_specials(a);
  build_memory(a);
  set_process_state(a);
  create_threads(a);
  finish_thread(a, 0);
  __builtin_unreachable();
}

}  // namespace cxlpool::ckpt::blob
