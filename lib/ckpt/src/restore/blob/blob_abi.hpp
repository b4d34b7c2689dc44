// SPDX-License-Identifier: Apache-2.0
// What the restorer's C++ stage hands to its freestanding final stage: plain
// structs at fixed offsets inside the restorer's own area, which is the only
// memory of the restorer that survives once the final stage starts (it
// unmaps everything else). No pointers into the C++ stage's memory, no
// constructors, nothing the final stage would need libc for.
#pragma once

#include <stdint.h>

namespace cxlpool::ckpt::blob {

inline constexpr uint64_t kArgsMagic = 0x4352455354524c43ull;  // "CLRTSERC"

enum class StepKind : uint32_t {
  kMap = 1,      // mmap(addr, len, prot, flags, fd, offset); fd -1 for anonymous
  kCopy = 2,     // pread len bytes of fd at offset into addr (already mapped, writable)
  kProtect = 3,  // mprotect(addr, len, prot)
  kUffd = 4,     // register [addr, addr + len) with the clone's userfaultfd (missing mode)
  kAdvise = 5,   // madvise(addr, len, prot): prot holds the advice
};

struct Step {
  uint64_t addr, len;
  uint32_t prot, flags;
  int32_t fd;
  StepKind kind;
  uint64_t offset;
};

struct Range {
  uint64_t start, end;
};

// A special mapping of the restorer's own ([vdso], [vvar], [vvar_vclock])
// moved to where the target had it.
struct Move {
  uint64_t from, to, len;
};

struct KernelSigaction {
  uint64_t handler, flags, restorer, mask;
};

struct Rlimit {
  uint64_t cur, max;
};

struct Itimerval {
  int64_t interval_sec, interval_usec, value_sec, value_usec;
};

// The fields of struct prctl_mm_map, in its order.
struct MmMap {
  uint64_t start_code, end_code, start_data, end_data, start_brk, brk, start_stack;
  uint64_t arg_start, arg_end, env_start, env_end;
  uint64_t auxv;  // address of the auxv words (inside the area)
  uint32_t auxv_size;
  uint32_t exe_fd;
};

struct Thread {
  int32_t tid;
  uint32_t pending_count;     // thread-private siginfos to queue
  uint64_t pending;           // address of pending_count 128-byte siginfos
  uint64_t frame_sp;          // rsp for rt_sigreturn: the ucontext of its frame
  uint64_t stack_top;         // where a created thread's final stage runs
  uint64_t fs_base, gs_base;
  uint64_t rseq_addr;
  uint32_t rseq_len, rseq_sig;
  uint64_t clear_child_tid;
  char name[16];              // PR_SET_NAME's argument: the thread's name, NUL-terminated
};

struct Creds {
  uint32_t uid[3], gid[3];
  uint32_t group_count, no_new_privs;
  uint64_t groups;  // address of group_count u32s
  uint64_t cap_effective, cap_permitted, cap_inheritable;
};

// Where the final stage failed, written to the status pipe with the errno.
enum class Failure : uint32_t {
  kNone = 0,
  kMoveSpecial, kUnmap, kMap, kCopy, kProtect, kUffd, kUffdSend, kAdvise, kMmMap, kPersonality, kSigaction,
  kRlimit, kItimer, kSigqueue, kCloneThread, kFsBase, kRseq, kCreds, kThreadName, kStatus,
};

struct Status {
  uint32_t failure;  // Failure; kNone: restored, about to return into the target
  int32_t error;     // positive errno
  uint64_t step;     // index of the step, thread or signal that failed
};

struct Args {
  uint64_t magic;
  int32_t pid;
  int32_t status_fd;      // pipe to the keeper: one Status
  int32_t uffd_socket;    // unix socket to the keeper for the userfaultfd; -1 without one
  int32_t close_from;     // the restorer's descriptors at and above this are closed at the end
  uint64_t own_rseq_addr;  // the restorer thread's glibc rseq registration, undone first
  uint32_t own_rseq_len, own_rseq_sig;
  uint64_t park;          // scratch inside the area for the special mappings in flight
  uint32_t move_count, unmap_count;
  Move moves[4];
  uint64_t unmaps;        // address of unmap_count Ranges
  uint64_t steps;         // address of step_count Steps
  uint32_t step_count;
  uint32_t personality;
  int32_t uffd_keep;      // the clone's userfaultfd, kept open; -1 without one
  uint32_t thread_count;
  uint64_t threads;       // address of thread_count Threads; [0] is the leader
  MmMap mm;
  KernelSigaction sigactions[64];
  Rlimit rlimits[16];
  Itimerval itimers[3];   // ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF
  uint32_t shared_pending_count;
  uint32_t pad0;
  uint64_t shared_pending;  // 128-byte siginfos queued to the process
  Creds creds;
  // Written by the threads while they finish: how many are ready, and the
  // leader's go once every one is.
  uint32_t ready;
  uint32_t go;
  // 1: threads get their tid in the clone's pid namespace; 2: in its
  // parent's as well (CloneOptions::host_pids).
  uint32_t tid_levels;
  uint32_t pad1;
};

// The final stage's entry, called on a stack inside the area with the
// area's Args. Never returns: it ends in rt_sigreturn or exit_group.
extern "C" __attribute__((visibility("hidden"))) void cxlpool_restorer_main(Args* args);
// The bounds of the section that holds the final stage, which the C++ stage
// copies into the area (the linker defines them).
extern "C" const char __start_cxlpool_restorer[] __attribute__((visibility("hidden")));
extern "C" const char __stop_cxlpool_restorer[] __attribute__((visibility("hidden")));

}  // namespace cxlpool::ckpt::blob
