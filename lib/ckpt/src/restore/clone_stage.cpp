// SPDX-License-Identifier: Apache-2.0
#include "clone_stage.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "blob/blob_abi.hpp"
#include "client_reconnect.hpp"
#include "cxlpool/ckpt/restorer.hpp"
#include "fd_objects.hpp"
#include "sigframe.hpp"

namespace cxlpool::ckpt {
namespace {

constexpr uint64_t kThreadBytes = 64 * 1024;     // final-stage stack, xsave area, frame
constexpr uint64_t kThreadStackBytes = 32 * 1024;
constexpr uint64_t kFrameOffset = 60 * 1024;
constexpr uint32_t kRseqSig = 0x53053053;

[[noreturn]] void die(int status_fd, const std::string& message) {
  blob::Status s{kFailurePrepare, 0, 0};
  std::string text = message.substr(0, 1000);
  (void)!::write(status_fd, &s, sizeof s);
  (void)!::write(status_fd, text.data(), text.size());
  ::_exit(127);
}

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// Bump allocation inside the area's argument block, so that the final stage
// finds everything at fixed addresses.
class AreaWriter {
 public:
  AreaWriter(uint8_t* base, uint64_t addr, uint64_t bytes) : base_(base), addr_(addr), bytes_(bytes) {}
  uint64_t put(const void* data, uint64_t n, uint64_t align = 16) {
    used_ = round_up(used_, align);
    const uint64_t at = used_;
    if (n && data) std::memcpy(base_ + at, data, n);
    used_ += n;
    return addr_ + at;
  }
  uint64_t used() const { return used_; }

 private:
  uint8_t* base_;
  uint64_t addr_, bytes_, used_ = 0;
};

struct Stash {
  int close_from = 0;
  std::map<uint32_t, int> file_fds;  // manifest file index -> stashed descriptor
  std::vector<int> region_fds;       // per Manifest::regions entry, stashed
  std::map<uint32_t, int> shared_fds;  // kSharedAnon object id -> its new memfd, stashed
  int cxlpool_socket = -1;           // the new connection to cxlpoold, stashed
  int image = -1, status = -1, uffd_socket = -1;
};

int highest_open_fd() {
  int highest = 2;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) highest = std::max(highest, std::atoi(e->d_name));
    ::closedir(d);
  }
  return highest;
}

int stash_fd(int fd, int from, int status_fd) {
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, from);
  if (moved < 0) die(status_fd, fmt::format("moving descriptor {} above {}: {}", fd, from, std::strerror(errno)));
  return moved;
}

void check_identity(int fd, const FileRef& f, int status_fd, bool content = true) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) die(status_fd, fmt::format("fstat {}: {}", f.path, std::strerror(errno)));
  FileStat now{static_cast<uint64_t>(st.st_dev), st.st_ino, static_cast<uint64_t>(st.st_size),
               st.st_mtim.tv_sec * 1'000'000'000ll + st.st_mtim.tv_nsec};
  if (S_ISDIR(st.st_mode) || !content) now.size = f.size, now.mtime_ns = f.mtime_ns;
  if (auto ok = check_file_unchanged(f, now); !ok) die(status_fd, ok.error().message);
}

// Moves what the final stage needs above every descriptor the target had
// and the restorer has, closes the rest of the restorer's, and opens the
// target's regular files and directories at their numbers.
Stash arrange_fds(const Manifest& m, const CloneChannels& ch) {
  Stash st;
  int highest_target = 2;
  for (const FdEntry& f : m.fds) highest_target = std::max(highest_target, f.fd);
  st.close_from = std::max(highest_target, highest_open_fd()) + 1;
  st.status = stash_fd(ch.status_fd, st.close_from, ch.status_fd);
  const int status = st.status;
  st.image = stash_fd(ch.image_fd, st.close_from, status);
  if (ch.uffd_socket >= 0) st.uffd_socket = stash_fd(ch.uffd_socket, st.close_from, status);
  std::vector<uint32_t> mapped;
  for (const Vma& v : m.vmas)
    if (v.kind == VmaKind::kFilePrivate) mapped.push_back(v.file);
  if (m.process.mm.exe_file != kNoFile) mapped.push_back(m.process.mm.exe_file);
  for (uint32_t file : mapped) {
    if (st.file_fds.contains(file)) continue;
    const FileRef& f = m.files[file];
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) die(status, fmt::format("open {}: {}", f.path, std::strerror(errno)));
    check_identity(fd, f, status);
    st.file_fds[file] = stash_fd(fd, st.close_from, status);
    ::close(fd);
  }
  // Shared anonymous memory is made again as one memfd per object, as
  // large as its VMAs reach, so that every VMA of it maps the same pages.
  std::map<uint32_t, uint64_t> shared_bytes;
  for (const Vma& v : m.vmas)
    if (v.kind == VmaKind::kSharedAnon)
      shared_bytes[v.file] = std::max(shared_bytes[v.file], v.file_offset + (v.end - v.start));
  for (const auto& [object, bytes] : shared_bytes) {
    const int fd = ::memfd_create("cxlpool-shared-anon", MFD_CLOEXEC);
    if (fd < 0) die(status, fmt::format("memfd_create for shared anonymous memory: {}", std::strerror(errno)));
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0)
      die(status, fmt::format("sizing shared anonymous memory to {} bytes: {}", bytes, std::strerror(errno)));
    st.shared_fds[object] = stash_fd(fd, st.close_from, status);
    ::close(fd);
  }
  // The connection is made here, as the clone (its pid is the target's),
  // before the restorer's descriptors go.
  auto client = reconnect_client(m, ch.image_fd);
  if (!client) die(status, client.error().message);
  if (client->socket) st.cxlpool_socket = stash_fd(client->socket.get(), st.close_from, status);
  for (const UniqueFd& fd : client->regions) st.region_fds.push_back(stash_fd(fd.get(), st.close_from, status));
  client->socket.reset();
  client->regions.clear();
  ::syscall(SYS_close_range, 3u, static_cast<unsigned>(st.close_from - 1), 0u);
  if (auto made = recreate_fd_objects(m, st.close_from); !made) die(status, made.error().message);
  for (const FdEntry& e : m.fds) {
    if (e.kind == FdKind::kCxlpoolSocket || e.kind == FdKind::kCxlpoolRegion) {
      // The library's descriptor numbers stay valid: the new connection and
      // the regions take the numbers the process had.
      const int from = e.kind == FdKind::kCxlpoolSocket ? st.cxlpool_socket : st.region_fds.at(e.file);
      if (::dup3(from, e.fd, static_cast<int>(e.open_flags) & O_CLOEXEC) < 0)
        die(status, fmt::format("dup3 to fd {}: {}", e.fd, std::strerror(errno)));
      continue;
    }
    if (e.kind == FdKind::kStdio) {
      // The caller's descriptor stands in for the pipe or terminal the
      // process had, with the status flags the process had set on it.
      const int keep = ::fcntl(e.fd, F_GETFL);
      if (keep >= 0)
        ::fcntl(e.fd, F_SETFL, (keep & ~(O_NONBLOCK | O_APPEND)) |
                                   (static_cast<int>(e.open_flags) & (O_NONBLOCK | O_APPEND)));
      continue;
    }
    if (e.kind != FdKind::kRegular && e.kind != FdKind::kDirectory) continue;
    const FileRef& f = m.files[e.file];
    int flags = static_cast<int>(e.open_flags) & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY);
    if (e.kind == FdKind::kDirectory) flags = O_RDONLY | O_DIRECTORY | (flags & O_CLOEXEC);
    const int fd = ::open(f.path.c_str(), flags);
    if (fd < 0) die(status, fmt::format("open {} for fd {}: {}", f.path, e.fd, std::strerror(errno)));
    check_identity(fd, f, status, !fd_writes(e));
    if (fd != e.fd) {
      if (::dup3(fd, e.fd, flags & O_CLOEXEC) < 0)
        die(status, fmt::format("dup3 to fd {}: {}", e.fd, std::strerror(errno)));
      ::close(fd);
    }
    if (e.kind == FdKind::kRegular && ::lseek(e.fd, static_cast<off_t>(e.offset), SEEK_SET) < 0)
      die(status, fmt::format("seek fd {} to {}: {}", e.fd, e.offset, std::strerror(errno)));
  }
  return st;
}

blob::StepKind blob_kind(StepKind k) {
  switch (k) {
    case StepKind::kMap: return blob::StepKind::kMap;
    case StepKind::kCopy: return blob::StepKind::kCopy;
    case StepKind::kProtect: return blob::StepKind::kProtect;
    case StepKind::kUffd: return blob::StepKind::kUffd;
    case StepKind::kAdvise: return blob::StepKind::kAdvise;
  }
  return blob::StepKind::kMap;
}

blob::Itimerval to_itimer(const ITimer& t) {
  return {static_cast<int64_t>(t.interval_us / 1000000), static_cast<int64_t>(t.interval_us % 1000000),
          static_cast<int64_t>(t.value_us / 1000000), static_cast<int64_t>(t.value_us % 1000000)};
}

}  // namespace

void run_clone_stage(const Manifest& m, const RestorePlan& plan, const CloneChannels& ch) {
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  const Stash st = arrange_fds(m, ch);
  const int status = st.status;
  if (!m.process.cwd.empty() && ::chdir(m.process.cwd.c_str()) != 0)
    die(status, fmt::format("chdir {}: {}", m.process.cwd, std::strerror(errno)));
  ::umask(m.process.umask);
  // The clone's threads are created from this one and inherit its name.
  ::prctl(PR_SET_NAME, m.process.comm.c_str());

  // The area: the final stage's code, its arguments, a region per thread,
  // and the park for the vDSO block in flight.
  const uint64_t code_bytes =
      round_up(static_cast<uint64_t>(blob::__stop_cxlpool_restorer - blob::__start_cxlpool_restorer), kPageSize);
  uint64_t pending_bytes = m.process.shared_pending.size() * 128;
  for (const ThreadState& t : m.threads) pending_bytes += t.pending.size() * 128;
  const uint64_t args_bytes =
      round_up(sizeof(blob::Args) + plan.steps.size() * sizeof(blob::Step) + 64 * sizeof(blob::Range) +
                   m.threads.size() * sizeof(blob::Thread) + pending_bytes + m.process.mm.auxv.size() * 8 +
                   m.process.creds.groups.size() * 4 + 64 * 16,
               kPageSize);
  uint64_t park_bytes = 0;
  if (!plan.moves.empty()) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const SpecialMove& mv : plan.moves) lo = std::min(lo, mv.from), hi = std::max(hi, mv.from + mv.len);
    park_bytes = round_up(hi - lo, kPageSize);
  }
  const uint64_t threads_offset = code_bytes + args_bytes;
  const uint64_t park_offset = threads_offset + m.threads.size() * kThreadBytes;
  const uint64_t area_bytes = park_offset + park_bytes;

  void* area = MAP_FAILED;
  for (uint64_t at : area_candidates(plan.gaps, area_bytes, 1ull << 20)) {
    area = ::mmap(reinterpret_cast<void*>(at), area_bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (area != MAP_FAILED && reinterpret_cast<uint64_t>(area) == at) break;
    if (area != MAP_FAILED) ::munmap(area, area_bytes);
    area = MAP_FAILED;
  }
  if (area == MAP_FAILED)
    die(status, fmt::format("no room for the restorer's {} KiB outside the target's and the restorer's mappings",
                            area_bytes >> 10));
  uint8_t* base = static_cast<uint8_t*>(area);
  const uint64_t area_addr = reinterpret_cast<uint64_t>(area);
  std::memcpy(base, blob::__start_cxlpool_restorer, blob::__stop_cxlpool_restorer - blob::__start_cxlpool_restorer);

  auto* args = reinterpret_cast<blob::Args*>(base + code_bytes);
  std::memset(args, 0, sizeof *args);
  AreaWriter w(base + code_bytes, area_addr + code_bytes, args_bytes);
  w.put(nullptr, sizeof(blob::Args));
  args->magic = blob::kArgsMagic;
  args->pid = m.process.pid;
  args->status_fd = st.status;
  args->uffd_socket = st.uffd_socket;
  args->close_from = st.close_from;
  if (__rseq_size > 0) {
    args->own_rseq_addr = reinterpret_cast<uint64_t>(__builtin_thread_pointer()) + __rseq_offset;
    args->own_rseq_len = std::max<uint32_t>(__rseq_size, 32);
    args->own_rseq_sig = kRseqSig;
  }
  args->park = area_addr + park_offset;
  args->move_count = static_cast<uint32_t>(plan.moves.size());
  std::vector<AddrRange> keep{{area_addr, area_addr + area_bytes}};
  for (size_t i = 0; i < plan.moves.size() && i < 4; ++i) {
    args->moves[i] = {plan.moves[i].from, plan.moves[i].to, plan.moves[i].len};
    keep.push_back({plan.moves[i].to, plan.moves[i].to + plan.moves[i].len});
  }
  std::vector<blob::Range> unmaps;
  for (const AddrRange& r : unmap_ranges(keep, 0, 0x7ffffffff000ull)) unmaps.push_back({r.start, r.end});
  args->unmap_count = static_cast<uint32_t>(unmaps.size());
  args->unmaps = w.put(unmaps.data(), unmaps.size() * sizeof(blob::Range));

  std::vector<blob::Step> steps;
  for (const RestoreStep& s : plan.steps) {
    blob::Step b{};
    b.kind = blob_kind(s.kind);
    b.addr = s.addr;
    b.len = s.len;
    b.prot = s.kind == StepKind::kAdvise ? static_cast<uint32_t>(s.advice) : s.prot;
    b.flags = s.map_flags;
    b.fd = -1;
    b.offset = s.offset;
    if (s.kind == StepKind::kCopy || s.kind == StepKind::kUffd || s.source == MapSource::kImage) b.fd = st.image;
    if (s.kind == StepKind::kMap && s.source == MapSource::kFile) b.fd = st.file_fds.at(s.file);
    if (s.kind == StepKind::kMap && s.source == MapSource::kRegion) b.fd = st.region_fds.at(s.file);
    if (s.kind == StepKind::kMap && s.source == MapSource::kSharedObject) b.fd = st.shared_fds.at(s.file);
    steps.push_back(b);
  }
  args->step_count = static_cast<uint32_t>(steps.size());
  args->steps = w.put(steps.data(), steps.size() * sizeof(blob::Step));
  args->personality = m.process.personality;
  args->uffd_keep = -1;

  const MmFields& mm = m.process.mm;
  args->mm = {mm.start_code, mm.end_code, mm.start_data, mm.end_data, mm.start_brk, mm.brk, mm.start_stack,
              mm.arg_start, mm.arg_end, mm.env_start, mm.env_end, 0, 0, 0xffffffffu};
  args->mm.auxv = w.put(mm.auxv.data(), mm.auxv.size() * 8);
  args->mm.auxv_size = static_cast<uint32_t>(mm.auxv.size() * 8);
  if (mm.exe_file != kNoFile) args->mm.exe_fd = static_cast<uint32_t>(st.file_fds.at(mm.exe_file));
  for (size_t i = 0; i < 64; ++i) {
    const SigAction& a = m.process.sigactions[i];
    args->sigactions[i] = {a.handler, a.flags, a.restorer, a.mask};
  }
  for (size_t i = 0; i < 16; ++i) args->rlimits[i] = {m.process.rlimits[i][0], m.process.rlimits[i][1]};
  args->itimers[0] = to_itimer(m.process.itimer_real);
  args->itimers[1] = to_itimer(m.process.itimer_virtual);
  args->itimers[2] = to_itimer(m.process.itimer_prof);
  args->shared_pending_count = static_cast<uint32_t>(m.process.shared_pending.size());
  args->shared_pending = w.put(m.process.shared_pending.data(), m.process.shared_pending.size() * 128);
  const Credentials& c = m.process.creds;
  for (int i = 0; i < 3; ++i) args->creds.uid[i] = c.uid[i], args->creds.gid[i] = c.gid[i];
  args->creds.group_count = static_cast<uint32_t>(c.groups.size());
  args->creds.groups = w.put(c.groups.data(), c.groups.size() * 4);
  args->creds.no_new_privs = c.no_new_privs;
  args->creds.cap_effective = c.cap_effective;
  args->creds.cap_permitted = c.cap_permitted;
  args->creds.cap_inheritable = c.cap_inheritable;

  std::vector<blob::Thread> threads;
  for (size_t i = 0; i < m.threads.size(); ++i) {
    const ThreadState& t = m.threads[i];
    const uint64_t region = area_addr + threads_offset + i * kThreadBytes;
    const uint64_t xsave_addr = region + kThreadStackBytes;
    const uint64_t frame_addr = region + kFrameOffset;
    if (t.xsave.size() + 64 > kFrameOffset - kThreadStackBytes)
      die(status, fmt::format("thread {}: an xsave area of {} bytes does not fit", t.tid, t.xsave.size()));
    auto frame = build_thread_frame(t, frame_addr, xsave_addr);
    if (!frame) die(status, frame.error().message);
    std::memcpy(base + (frame_addr - area_addr), frame->frame.data(), frame->frame.size());
    std::memcpy(base + (xsave_addr - area_addr), frame->xsave.data(), frame->xsave.size());
    blob::Thread b{};
    b.tid = t.tid;
    b.pending_count = static_cast<uint32_t>(t.pending.size());
    b.pending = w.put(t.pending.data(), t.pending.size() * 128);
    b.frame_sp = frame->sp;
    b.stack_top = region + kThreadStackBytes - 64;
    b.fs_base = frame->fs_base;
    b.gs_base = frame->gs_base;
    b.rseq_addr = t.rseq.addr;
    b.rseq_len = t.rseq.len;
    b.rseq_sig = t.rseq.sig;
    b.clear_child_tid = t.clear_child_tid;
    static_assert(sizeof b.name > kMaxThreadNameBytes);
    std::memcpy(b.name, t.name.data(), std::min<size_t>(t.name.size(), kMaxThreadNameBytes));
    threads.push_back(b);
  }
  args->thread_count = static_cast<uint32_t>(threads.size());
  args->tid_levels = ch.host_pids ? 2 : 1;
  args->threads = w.put(threads.data(), threads.size() * sizeof(blob::Thread));
  if (w.used() > args_bytes) die(status, "the restorer's argument block overflowed");
  if (::mprotect(base, code_bytes, PROT_READ | PROT_EXEC) != 0)
    die(status, fmt::format("mprotect the final stage: {}", std::strerror(errno)));

  const uint64_t entry = area_addr + static_cast<uint64_t>(reinterpret_cast<const char*>(&blob::cxlpool_restorer_main) -
                                                           blob::__start_cxlpool_restorer);
  const uint64_t stack_top = threads[0].stack_top & ~15ull;
  asm volatile(
      "mov %0, %%rsp\n\t"
      "xor %%ebp, %%ebp\n\t"
      "call *%1\n\t"
      "ud2\n\t"
      :
      : "r"(stack_top), "r"(entry), "D"(args)
      : "memory");
  __builtin_unreachable();
}

}  // namespace cxlpool::ckpt
