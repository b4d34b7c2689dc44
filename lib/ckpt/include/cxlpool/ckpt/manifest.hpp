// SPDX-License-Identifier: Apache-2.0
// What a checkpoint records about a process: the manifest. The page data it
// refers to lies in the same image file, page aligned, so that a restore can
// map it MAP_PRIVATE (docs/ckpt.md "Image format").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cxlpool::ckpt {

// 2: every thread's name (ThreadState::name).
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kNoFile = 0xffffffffu;
inline constexpr uint64_t kPageSize = 4096;

enum class VmaKind : uint8_t {
  kAnon = 1,       // private anonymous (heap, stack, malloc arenas, thread stacks)
  kFilePrivate,    // MAP_PRIVATE of a regular file (exe, libraries, read-only data)
  kVdso,           // [vdso]: moved, not copied
  kVvar,           // [vvar]
  kVvarVclock,     // [vvar_vclock] (kernels >= 6.13)
  kVsyscall,       // [vsyscall]: fixed by the kernel, left alone
  kCxlpoolRegion,  // a shared mapping of a cxlpool region: re-mapped by the client library
  kFileSharedReadOnly,  // MAP_SHARED of a regular file that can never be written through this
                        // mapping (read-only and opened read-only: glibc's locale and gconv
                        // caches): mapped again from the file, no pages stored
  kSharedAnon,  // MAP_SHARED|MAP_ANONYMOUS memory (shmem, "/dev/zero (deleted)") no other process
                // maps: Vma::file is its object id (VMAs with one id are one object), file_offset
                // the VMA's offset in it; its present pages are stored and always copied back
};

// The most a kSharedAnon object may span (offset + length): the user address space.
inline constexpr uint64_t kMaxSharedObjectBytes = 1ull << 47;

// Vma::madvise bits: advice seen in smaps' VmFlags that a restore re-applies.
inline constexpr uint32_t kAdviseDontFork = 1u << 0;    // MADV_DONTFORK ("dc")
inline constexpr uint32_t kAdviseWipeOnFork = 1u << 1;  // MADV_WIPEONFORK ("wf")
inline constexpr uint32_t kAdviseHugePage = 1u << 2;    // MADV_HUGEPAGE ("hg")
inline constexpr uint32_t kAdviseNoHugePage = 1u << 3;  // MADV_NOHUGEPAGE ("nh")
inline constexpr uint32_t kAdviseDontDump = 1u << 4;    // MADV_DONTDUMP ("dd")

// One VMA as /proc/PID/maps and smaps show it.
struct Vma {
  uint64_t start = 0, end = 0;
  uint32_t prot = 0;        // PROT_READ | PROT_WRITE | PROT_EXEC
  uint32_t map_flags = 0;   // MAP_PRIVATE, MAP_SHARED, MAP_GROWSDOWN
  VmaKind kind = VmaKind::kAnon;
  uint32_t file = kNoFile;  // index into Manifest::files for kFilePrivate / kCxlpoolRegion;
                            // the shared object's id for kSharedAnon (0, 1, ... in order of first use)
  uint64_t file_offset = 0;
  uint32_t madvise = 0;     // recorded advice that must be re-applied (VM_DONTFORK, hugepage...)
};

// Pages present in the image: `pages` pages from `addr`, stored at
// `image_offset` (page aligned) in the image file. For a kFilePrivate VMA
// only the pages the process changed (anonymous in pagemap) are stored; the
// others come from the file.
struct PageRun {
  uint64_t addr = 0;
  uint64_t pages = 0;
  uint64_t image_offset = 0;
};

// A file the process maps or has open, identified so a restore can refuse a
// file that changed since.
struct FileRef {
  std::string path;
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0;
};

enum class FdKind : uint8_t {
  kRegular = 1,    // reopened by path with flags, then seeked
  kStdio,          // fd 0-2 that is a pipe, pty or socket: replaced by the restorer's caller's
  kCxlpoolSocket,  // the cxlpool control socket: the client library reconnects
  kDirectory,
  kCxlpoolRegion,  // a descriptor of a cxlpool region (FdEntry::file indexes Manifest::regions)
  kEventfd,        // an eventfd: made again with its counter and flags (FdObject)
  kPipe,           // one end of a pipe whose both ends the process holds (FdObject;
                   // open_flags' access mode says which end)
  kSocketPair,     // one end of a unix socketpair whose both ends the process holds (FdObject)
  kUnixListener,   // a bound, listening unix stream or seqpacket socket, nothing queued (FdObject)
};

struct FdEntry {
  int32_t fd = -1;
  FdKind kind = FdKind::kRegular;
  uint32_t file = kNoFile;   // index into Manifest::files
  uint32_t open_flags = 0;   // O_* from fdinfo (O_CLOEXEC from fdinfo flags too)
  uint64_t offset = 0;
};

// What a restore needs beyond FdEntry to make a kernel object again: one per
// fd of kind kEventfd, kPipe, kSocketPair or kUnixListener, in the
// fd_objects section (a later addition: images without it have no such fds).
inline constexpr uint32_t kEventfdSemaphore = 1u << 0;  // FdObject::detail of a kEventfd: EFD_SEMAPHORE
inline constexpr uint32_t kDefaultPipeBytes = 16 * 4096;  // a new pipe's capacity
inline constexpr uint32_t kMaxPipeBytes = 1u << 28;       // the most a pipe's capacity may be in a manifest
inline constexpr uint32_t kMaxUnixAddressBytes = 108;     // sizeof sockaddr_un::sun_path
inline constexpr uint64_t kMaxListenBacklog = 0x7fffffff;  // listen(2) takes an int

struct FdObject {
  int32_t fd = -1;
  // The kernel object the fd refers to: fds with one object are restored as
  // one (dups). The eventfd's id, the pipe's inode, the socket's inode.
  uint64_t object = 0;
  uint64_t peer = 0;     // kSocketPair: the other end's socket inode
  uint64_t counter = 0;  // kEventfd: the counter; kUnixListener: the backlog
  // kEventfd: kEventfdSemaphore; kPipe: capacity in bytes (F_GETPIPE_SZ);
  // kSocketPair: SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET; kUnixListener:
  // SOCK_STREAM or SOCK_SEQPACKET.
  uint32_t detail = 0;
  // kPipe: the bytes buffered in the pipe when it was checkpointed, on the
  // pipe's first fd only (the others of that pipe have none).
  // kUnixListener: the bound address, sun_path's bytes as the kernel holds
  // them (an abstract name starts with a NUL and may hold more; a path has
  // none, and no terminating one), on every fd of the socket.
  std::vector<uint8_t> contents;
};

struct Rseq {
  uint64_t addr = 0;  // 0: not registered
  uint32_t len = 0, sig = 0;
};

struct AltStack {
  uint64_t sp = 0, size = 0;
  int32_t flags = 0;
};

// One thread, stopped with PTRACE_INTERRUPT.
struct ThreadState {
  int32_t tid = 0;
  std::vector<uint8_t> regs;   // struct user_regs_struct (NT_PRSTATUS), raw
  std::vector<uint8_t> xsave;  // NT_X86_XSTATE, raw; its size is the kernel's
  uint64_t sigmask = 0;        // blocked signals (PTRACE_GETSIGMASK)
  std::vector<std::array<uint8_t, 128>> pending;  // thread-private pending siginfo (PTRACE_PEEKSIGINFO)
  Rseq rseq;                   // PTRACE_GET_RSEQ_CONFIGURATION
  uint64_t clear_child_tid = 0;  // set_tid_address / CLONE_CHILD_CLEARTID
  AltStack altstack;
  // The thread's name (/proc/PID/task/TID/comm, PR_SET_NAME): at most
  // kMaxThreadNameBytes bytes, no NUL. Drivers' helper threads are told
  // apart by it.
  std::string name;
  // In a syscall when stopped: the restart is the restorer's to arrange
  // (the registers already say -ERESTART*; see docs/ckpt.md).
};

// TASK_COMM_LEN less its terminating NUL.
inline constexpr uint32_t kMaxThreadNameBytes = 15;

struct SigAction {
  uint64_t handler = 0, flags = 0, restorer = 0, mask = 0;
};

struct ITimer {
  uint64_t interval_us = 0, value_us = 0;
};

// Fields that prctl(PR_SET_MM_MAP) takes, plus the auxiliary vector.
struct MmFields {
  uint64_t start_code = 0, end_code = 0, start_data = 0, end_data = 0;
  uint64_t start_brk = 0, brk = 0, start_stack = 0;
  uint64_t arg_start = 0, arg_end = 0, env_start = 0, env_end = 0;
  std::vector<uint64_t> auxv;
  uint32_t exe_file = kNoFile;
};

struct Credentials {
  uint32_t uid[3] = {}, gid[3] = {};  // real, effective, saved
  std::vector<uint32_t> groups;
  uint64_t cap_inheritable = 0, cap_permitted = 0, cap_effective = 0, cap_bounding = 0, cap_ambient = 0;
  uint32_t no_new_privs = 0;
};

struct ProcessState {
  int32_t pid = 0;
  std::string comm;
  Credentials creds;
  std::string cwd;
  uint32_t umask = 022;
  uint32_t personality = 0;
  std::array<std::array<uint64_t, 2>, 16> rlimits{};  // RLIMIT_* {cur, max}
  std::array<SigAction, 64> sigactions{};             // index = signal - 1
  std::vector<std::array<uint8_t, 128>> shared_pending;  // process-wide pending siginfo
  ITimer itimer_real, itimer_virtual, itimer_prof;
  MmFields mm;
};

// RegionRef::kind: how a restore gets the region again.
enum class RegionKind : uint8_t {
  kUnknown = 0,  // an image without the client section
  kNamed = 1,    // opened again by name under the clone's credentials
  kLeased = 2,   // held by a lease of the connection: a clone's new connection leases one like it (Lease)
};

// A cxlpool region the process held: a mapping of `length` bytes at `addr`
// (the region's bytes from `offset`), or, with addr and length 0, a
// descriptor of the region (FdKind::kCxlpoolRegion). At restore the region
// is opened by name again through a new connection to cxlpoold and mapped
// MAP_SHARED at the same address.
struct RegionRef {
  uint64_t addr = 0, length = 0;
  std::string name;
  uint64_t region_id = 0;
  uint32_t prot = 0;
  // Client section (format section 13); defaults in older images.
  uint64_t offset = 0;
  RegionKind kind = RegionKind::kUnknown;
  bool writable = false;  // a mapping that may become writable, or a descriptor open O_RDWR
};

// A leased region's bytes as the checkpoint found them: `pages` pages from
// `offset` in the region, stored at `image_offset` in the image.
struct LeaseRun {
  uint64_t offset = 0;
  uint64_t pages = 0;
  uint64_t image_offset = 0;
};

// The most a lease in a manifest may span: the user address space.
inline constexpr uint64_t kMaxLeaseBytes = 1ull << 47;

// A leased region the process held (RegionRef kind kLeased with this id):
// a lease belongs to the connection that allocated it, so a restore leases
// a region of the same size on the same tier through the clone's new
// connection, copies the stored pages in (the rest stays zero, as holes
// were) and asks cxlpoold to answer to the recorded id for it
// (RegionAlias). Leases section (format section 15).
struct Lease {
  uint64_t region_id = 0;
  uint64_t size = 0;      // the region's bytes (page aligned)
  uint32_t tier_id = 0;
  std::vector<LeaseRun> runs;  // sorted by offset, inside size
};

struct Manifest {
  uint32_t version = kFormatVersion;
  uint64_t created_unix_ns = 0;
  std::string kernel_release;  // uname -r of the checkpointing host
  ProcessState process;
  std::vector<ThreadState> threads;  // threads[0] is the thread group leader
  std::vector<Vma> vmas;             // sorted by start, not overlapping
  std::vector<PageRun> runs;         // sorted by addr, each inside one VMA
  std::vector<FileRef> files;
  std::vector<FdEntry> fds;
  std::vector<FdObject> fd_objects;  // sorted by fd; one per kEventfd, kPipe, kSocketPair, kUnixListener fd
  std::vector<RegionRef> regions;
  std::vector<Lease> leases;         // sorted by region_id; one per leased region id in `regions`
  // The cxlpool control socket the process was connected to (client
  // section); empty when it held no connection.
  std::string cxlpool_socket;
  std::vector<uint64_t> hot_pages;   // page addresses to copy up front under the hybrid policy
  uint64_t image_data_offset = 0;    // where page data starts in the image (page aligned)
  uint64_t image_data_bytes = 0;
};

}  // namespace cxlpool::ckpt
