// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/ckpt/restore_plan.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>

namespace cxlpool::ckpt {
namespace {

constexpr uint64_t kUserRegsBytes = 27 * 8;  // struct user_regs_struct
constexpr uint64_t kMinXsaveBytes = 512 + 64;  // legacy area + xsave header
constexpr uint64_t kAreaAlign = 1ull << 20;
// Below a stack that grows down the kernel keeps a guard gap and the stack
// grows into what is free: the restorer's area stays out of that room.
constexpr uint64_t kStackRoom = 16ull << 20;

bool is_special(VmaKind kind) {
  return kind == VmaKind::kVdso || kind == VmaKind::kVvar || kind == VmaKind::kVvarVclock;
}

std::string_view special_name(VmaKind kind) {
  switch (kind) {
    case VmaKind::kVdso: return "[vdso]";
    case VmaKind::kVvar: return "[vvar]";
    case VmaKind::kVvarVclock: return "[vvar_vclock]";
    default: return "?";
  }
}

bool page_aligned(uint64_t v) { return v % kPageSize == 0; }

Result<std::vector<SpecialMove>> plan_specials(const Manifest& m, const HostFacts& host) {
  std::vector<const Vma*> target;
  for (const Vma& v : m.vmas)
    if (is_special(v.kind)) target.push_back(&v);
  std::vector<SpecialMove> moves;
  if (target.empty()) return moves;  // the target had none: the restorer's are unmapped
  if (target.size() != host.specials.size())
    return fail(EXDEV, fmt::format("the checkpoint has {} vDSO/vvar mappings, this kernel {}", target.size(),
                                   host.specials.size()));
  std::vector<SpecialMapping> mine = host.specials;
  std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  const uint64_t target_base = target[0]->start, my_base = mine[0].start;
  for (size_t i = 0; i < target.size(); ++i) {
    const Vma& t = *target[i];
    const SpecialMapping& s = mine[i];
    if (t.kind != s.kind)
      return fail(EXDEV, fmt::format("the checkpoint's vDSO/vvar mapping {} is {}, this kernel's {}", i,
                                     special_name(t.kind), special_name(s.kind)));
    if (t.end - t.start != s.end - s.start)
      return fail(EXDEV, fmt::format("this kernel's {} is {} bytes, the checkpoint's {}: restore on the kernel that "
                                     "checkpointed ({})",
                                     special_name(s.kind), s.end - s.start, t.end - t.start, m.kernel_release));
    if (t.start - target_base != s.start - my_base)
      return fail(EXDEV, fmt::format("this kernel lays {} out at another distance from the vDSO block than the "
                                     "checkpoint's kernel ({})",
                                     special_name(s.kind), m.kernel_release));
    moves.push_back({t.kind, s.start, t.start, t.end - t.start});
  }
  return moves;
}

// The target's layout as ranges, with room left below stacks that grow.
std::vector<AddrRange> target_gaps(const Manifest& m, const HostFacts& host) {
  std::vector<AddrRange> used;
  for (const Vma& v : m.vmas) {
    if (v.kind == VmaKind::kVsyscall) continue;
    uint64_t start = v.start;
    if (v.map_flags & MAP_GROWSDOWN) start = start > kStackRoom ? start - kStackRoom : 0;
    used.push_back({start, v.end});
  }
  std::sort(used.begin(), used.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  std::vector<AddrRange> gaps;
  uint64_t at = host.mmap_min_addr;
  for (const AddrRange& u : used) {
    if (u.start > at) gaps.push_back({at, std::min(u.start, host.task_size)});
    at = std::max(at, u.end);
  }
  if (at < host.task_size) gaps.push_back({at, host.task_size});
  return gaps;
}

// Splits [start, end) of a run into pieces that are hot or not.
struct Piece {
  uint64_t start, end;
  bool hot;
};

std::vector<Piece> split_hot(uint64_t start, uint64_t end, const std::set<uint64_t>& hot) {
  std::vector<Piece> pieces;
  for (uint64_t a = start; a < end; a += kPageSize) {
    const bool h = hot.contains(a);
    if (!pieces.empty() && pieces.back().hot == h && pieces.back().end == a)
      pieces.back().end = a + kPageSize;
    else
      pieces.push_back({a, a + kPageSize, h});
  }
  return pieces;
}

}  // namespace

std::string_view policy_name(RestorePolicy policy) {
  switch (policy) {
    case RestorePolicy::kMow: return "mow";
    case RestorePolicy::kMoa: return "moa";
    case RestorePolicy::kHybrid: return "hybrid";
    case RestorePolicy::kCopy: return "copy";
  }
  return "?";
}

Result<RestorePolicy> parse_policy(std::string_view name) {
  for (RestorePolicy p : {RestorePolicy::kMow, RestorePolicy::kMoa, RestorePolicy::kHybrid, RestorePolicy::kCopy})
    if (policy_name(p) == name) return p;
  return fail(EINVAL, fmt::format("unknown restore policy '{}' (mow, moa, hybrid or copy)", name));
}

namespace {

// The RegionRef recorded for a kCxlpoolRegion VMA: the mapping at its start.
const RegionRef* region_of(const Manifest& m, const Vma& v) {
  for (const RegionRef& g : m.regions) {
    if (g.length != 0 && g.addr == v.start && g.length == v.end - v.start) return &g;
  }
  return nullptr;
}

// After a VMA's pieces are mapped: its protection back where it was mapped
// writable for copies, then its advice, which lives in the VMA's flags, over
// the whole VMA.
void add_whole_vma_steps(const Vma& v, uint32_t mapped_prot, std::vector<RestoreStep>& steps) {
  if (mapped_prot != v.prot) {
    RestoreStep protect;
    protect.kind = StepKind::kProtect;
    protect.addr = v.start;
    protect.len = v.end - v.start;
    protect.prot = v.prot;
    steps.push_back(protect);
  }
  for (const auto& [bit, advice] : {std::pair{kAdviseDontFork, MADV_DONTFORK}, std::pair{kAdviseWipeOnFork, MADV_WIPEONFORK},
                                    std::pair{kAdviseHugePage, MADV_HUGEPAGE}, std::pair{kAdviseNoHugePage, MADV_NOHUGEPAGE},
                                    std::pair{kAdviseDontDump, MADV_DONTDUMP}}) {
    if (!(v.madvise & bit)) continue;
    if (advice == MADV_WIPEONFORK && v.kind != VmaKind::kAnon) continue;  // the kernel takes it on anonymous memory only
    RestoreStep a;
    a.kind = StepKind::kAdvise;
    a.addr = v.start;
    a.len = v.end - v.start;
    a.advice = advice;
    steps.push_back(a);
  }
}

// Shared anonymous memory under every policy: the object is made again
// (MapSource::kSharedObject, once per object id) and mapped MAP_SHARED at
// the VMA's offset, and the stored pages are copied in. A private mapping
// of the image would not be shared with the clone's children, and the
// userfaultfd server fills private anonymous memory only.
void plan_shared_anon(const Manifest& m, const Vma& v, size_t& r, RestorePlan& plan) {
  while (r < m.runs.size() && m.runs[r].addr < v.start) ++r;
  const size_t first_run = r;
  while (r < m.runs.size() && m.runs[r].addr < v.end) ++r;
  const bool copies = r > first_run;
  RestoreStep base;
  base.addr = v.start;
  base.len = v.end - v.start;
  base.prot = copies ? (v.prot | PROT_READ | PROT_WRITE) : v.prot;
  base.map_flags = MAP_SHARED;
  base.source = MapSource::kSharedObject;
  base.file = v.file;
  base.offset = v.file_offset;
  plan.steps.push_back(base);
  for (size_t i = first_run; i < r; ++i) {
    const PageRun& run = m.runs[i];
    RestoreStep c;
    c.kind = StepKind::kCopy;
    c.addr = run.addr;
    c.len = std::min(run.addr + run.pages * kPageSize, v.end) - run.addr;
    c.offset = run.image_offset;
    plan.copied_bytes += c.len;
    plan.steps.push_back(c);
  }
  add_whole_vma_steps(v, base.prot, plan.steps);
}

}  // namespace

Result<void> check_restorable(const Manifest& m) {
  if (m.version != kFormatVersion)
    return fail(ENOTSUP, fmt::format("checkpoint format version {}; this restorer reads {}", m.version,
                                     kFormatVersion));
  if (m.threads.empty()) return fail(EINVAL, "the checkpoint has no threads");
  if (m.process.pid <= 1)
    return fail(EINVAL, fmt::format("pid {} cannot be restored: pid 1 of the clone's namespace is its keeper",
                                    m.process.pid));
  if (m.threads[0].tid != m.process.pid)
    return fail(EINVAL, fmt::format("the first thread ({}) is not the thread group leader ({})", m.threads[0].tid,
                                    m.process.pid));
  std::set<int32_t> tids;
  for (const ThreadState& t : m.threads) {
    if (t.tid <= 1 || !tids.insert(t.tid).second)
      return fail(EINVAL, fmt::format("thread id {} is repeated or out of range", t.tid));
    if (t.regs.size() != kUserRegsBytes)
      return fail(EINVAL, fmt::format("thread {}: {} bytes of registers, x86-64 has {}", t.tid, t.regs.size(),
                                      kUserRegsBytes));
    // The kernel's user xstate size ends where its last component does:
    // not a multiple of 64 (PKRU at 2688 + 8 makes 2696).
    if (t.xsave.size() < kMinXsaveBytes)
      return fail(EINVAL, fmt::format("thread {}: an xsave area of {} bytes", t.tid, t.xsave.size()));
    if (t.rseq.addr && (t.rseq.len < 32 || t.rseq.addr % 32 != 0))
      return fail(EINVAL, fmt::format("thread {}: rseq area {:#x} of {} bytes", t.tid, t.rseq.addr, t.rseq.len));
  }
  for (const RegionRef& g : m.regions) {
    if (g.kind != RegionKind::kNamed && g.kind != RegionKind::kLeased)
      return fail(ENOTSUP, fmt::format("cxlpool region {} ('{}') is neither named nor leased: a clone cannot get "
                                       "it again (an image without the client section)", g.region_id, g.name));
  }
  const bool client = !m.regions.empty() || std::any_of(m.fds.begin(), m.fds.end(), [](const FdEntry& f) {
    return f.kind == FdKind::kCxlpoolSocket;
  });
  if (client && m.cxlpool_socket.empty())
    return fail(ENOTSUP, "the process held cxlpool resources and the checkpoint does not say which cxlpoold "
                         "they came from (an image without the client section)");
  uint64_t prev_end = 0;
  for (const Vma& v : m.vmas) {
    if (!page_aligned(v.start) || !page_aligned(v.end) || v.end <= v.start || v.start < prev_end)
      return fail(EINVAL, fmt::format("VMA {:#x}-{:#x} is not page aligned, empty or out of order", v.start, v.end));
    prev_end = v.end;
    if (v.kind == VmaKind::kCxlpoolRegion) {
      if (region_of(m, v) == nullptr)
        return fail(EINVAL, fmt::format("VMA {:#x}-{:#x} maps a cxlpool region the checkpoint does not list",
                                        v.start, v.end));
      continue;
    }
    if (v.kind == VmaKind::kSharedAnon) {
      if (!(v.map_flags & MAP_SHARED) || v.file == kNoFile)
        return fail(EINVAL, fmt::format("VMA {:#x}-{:#x} is shared anonymous memory without its object", v.start,
                                        v.end));
      continue;
    }
    if (v.kind == VmaKind::kFilePrivate && v.file >= m.files.size())
      return fail(EINVAL, fmt::format("VMA {:#x}-{:#x} names file {} of {}", v.start, v.end, v.file, m.files.size()));
    if (v.map_flags & MAP_SHARED)
      return fail(ENOTSUP, fmt::format("VMA {:#x}-{:#x} is a shared mapping", v.start, v.end));
  }
  int sockets = 0;
  for (const FdEntry& f : m.fds) {
    switch (f.kind) {
      case FdKind::kStdio:
        if (f.fd < 0 || f.fd > 2)
          return fail(ENOTSUP, fmt::format("fd {} is a pipe, pty or socket, which is replaced only as fd 0-2", f.fd));
        break;
      case FdKind::kRegular:
      case FdKind::kDirectory:
        if (f.fd < 0 || f.file >= m.files.size())
          return fail(EINVAL, fmt::format("fd {} names file {} of {}", f.fd, f.file, m.files.size()));
        break;
      case FdKind::kEventfd:
      case FdKind::kPipe:
      case FdKind::kSocketPair:
      case FdKind::kUnixListener:
        if (f.fd < 0) return fail(EINVAL, fmt::format("fd {} is out of range", f.fd));
        break;
      case FdKind::kCxlpoolSocket:
        if (sockets++ > 0) return fail(ENOTSUP, fmt::format("fd {} is a second cxlpool control socket", f.fd));
        break;
      case FdKind::kCxlpoolRegion:
        if (f.fd < 0 || f.file >= m.regions.size())
          return fail(EINVAL, fmt::format("fd {} names region {} of {}", f.fd, f.file, m.regions.size()));
        break;
      default: return fail(EINVAL, fmt::format("fd {} has an unknown kind", f.fd));
    }
  }
  if (m.process.mm.exe_file != kNoFile && m.process.mm.exe_file >= m.files.size())
    return fail(EINVAL, "the executable names a file the checkpoint does not list");
  return {};
}

Result<RestorePlan> plan_restore(const Manifest& m, RestorePolicy policy, const HostFacts& host) {
  if (auto ok = check_restorable(m); !ok) return tl::unexpected(ok.error());
  if (policy == RestorePolicy::kMoa && !host.lazy_pager)
    return fail(ENOTSUP, "policy moa: the lazy pager is not built into this restorer");
  RestorePlan plan;
  plan.policy = policy;
  auto moves = plan_specials(m, host);
  if (!moves) return tl::unexpected(moves.error());
  plan.moves = std::move(*moves);
  plan.gaps = target_gaps(m, host);
  const std::set<uint64_t> hot(m.hot_pages.begin(), m.hot_pages.end());

  size_t r = 0;
  for (const Vma& v : m.vmas) {
    if (v.kind == VmaKind::kCxlpoolRegion) {
      // The region's own pages, shared with cxlpoold and every other client.
      const RegionRef* g = region_of(m, v);
      RestoreStep s;
      s.addr = v.start;
      s.len = v.end - v.start;
      s.prot = v.prot;
      s.map_flags = MAP_SHARED;
      s.source = MapSource::kRegion;
      s.file = static_cast<uint32_t>(g - m.regions.data());
      s.offset = g->offset;
      plan.steps.push_back(s);
      continue;
    }
    if (v.kind == VmaKind::kSharedAnon) {
      plan_shared_anon(m, v, r, plan);
      continue;
    }
    if (v.kind != VmaKind::kAnon && v.kind != VmaKind::kFilePrivate) continue;
    while (r < m.runs.size() && m.runs[r].addr < v.start) ++r;  // a run outside every VMA: the decoder refuses it
    const size_t first_run = r;
    size_t last_run = r;
    while (last_run < m.runs.size() && m.runs[last_run].addr < v.end) ++last_run;
    r = last_run;

    // hybrid: a hot page is made the clone's own by writing it once in a
    // MAP_PRIVATE mapping of the image (MADV_POPULATE_WRITE: the kernel's
    // copy-on-write), so the run stays one mapping however the hot pages
    // interleave with cold ones; mapping each piece apart would split the
    // VMA per piece and run into vm.max_map_count.
    const bool hybrid = policy == RestorePolicy::kHybrid;
    bool copies = policy == RestorePolicy::kCopy;
    std::vector<std::vector<Piece>> pieces;
    for (size_t i = first_run; i < last_run; ++i) {
      const PageRun& run = m.runs[i];
      const uint64_t end = std::min(run.addr + run.pages * kPageSize, v.end);
      pieces.push_back(split_hot(run.addr, end, hybrid ? hot : std::set<uint64_t>{}));
      for (const Piece& p : pieces.back()) copies = copies || p.hot;
    }
    const uint32_t writable_prot = copies ? (v.prot | PROT_READ | PROT_WRITE) : v.prot;
    std::vector<RestoreStep> overlay;
    for (size_t i = first_run; i < last_run; ++i) {
      const PageRun& run = m.runs[i];
      const uint64_t end = std::min(run.addr + run.pages * kPageSize, v.end);
      RestoreStep s;
      s.addr = run.addr;
      s.len = end - run.addr;
      s.prot = v.prot;
      s.offset = run.image_offset;
      if (policy == RestorePolicy::kCopy) {
        s.kind = StepKind::kCopy;
        plan.copied_bytes += s.len;
      } else if (policy == RestorePolicy::kMoa && v.kind == VmaKind::kAnon) {
        s.kind = StepKind::kUffd;
        plan.lazy_bytes += s.len;
      } else {
        s.kind = StepKind::kMap;
        s.source = MapSource::kImage;
        s.map_flags = MAP_PRIVATE;
        s.prot = writable_prot;
        plan.mapped_image_bytes += s.len;
      }
      overlay.push_back(s);
      for (const Piece& p : pieces[i - first_run]) {
        if (!p.hot) continue;
        RestoreStep w;
        w.kind = StepKind::kAdvise;
        w.addr = p.start;
        w.len = p.end - p.start;
        w.advice = MADV_POPULATE_WRITE;
        plan.copied_bytes += w.len;
        overlay.push_back(w);
      }
    }
    RestoreStep base;
    base.addr = v.start;
    base.len = v.end - v.start;
    base.prot = writable_prot;
    base.map_flags = MAP_PRIVATE | (v.map_flags & MAP_GROWSDOWN);
    if (v.kind == VmaKind::kAnon) {
      base.source = MapSource::kAnon;
      base.map_flags |= MAP_ANONYMOUS;
    } else {
      base.source = MapSource::kFile;
      base.file = v.file;
      base.offset = v.file_offset;
    }
    plan.steps.push_back(base);
    plan.steps.insert(plan.steps.end(), overlay.begin(), overlay.end());
    add_whole_vma_steps(v, base.prot, plan.steps);
  }
  return plan;
}

void prefault_image_pages(RestorePlan& plan) {
  std::vector<RestoreStep> steps;
  for (const RestoreStep& s : plan.steps) {
    steps.push_back(s);
    if (s.kind != StepKind::kMap || s.source != MapSource::kImage || !(s.prot & PROT_READ)) continue;
    RestoreStep populate;
    populate.kind = StepKind::kAdvise;
    populate.addr = s.addr;
    populate.len = s.len;
    populate.advice = MADV_POPULATE_READ;
    steps.push_back(populate);
  }
  plan.steps = std::move(steps);
}

Result<void> check_file_unchanged(const FileRef& f, const FileStat& now) {
  std::string changed;
  if (now.dev != f.dev || now.ino != f.ino)
    changed = fmt::format("it is another file now (dev {} inode {}, was dev {} inode {})", now.dev, now.ino, f.dev,
                          f.ino);
  else if (now.size != f.size)
    changed = fmt::format("its size is {} bytes, was {}", now.size, f.size);
  else if (now.mtime_ns != f.mtime_ns)
    changed = fmt::format("it was modified since (mtime {} ns, was {})", now.mtime_ns, f.mtime_ns);
  if (changed.empty()) return {};
  return fail(ESTALE, fmt::format("{} changed since the checkpoint: {}", f.path, changed));
}

std::vector<uint64_t> area_candidates(const std::vector<AddrRange>& gaps, uint64_t bytes, uint64_t mmap_min_addr) {
  std::vector<uint64_t> out;
  for (const AddrRange& g : gaps) {
    const uint64_t lo = std::max(g.start, mmap_min_addr);
    const uint64_t start = (lo + kAreaAlign - 1) / kAreaAlign * kAreaAlign;
    if (start >= lo && start < g.end && g.end - start >= bytes) out.push_back(start);
    if (g.end >= bytes && g.end - bytes >= lo) {
      const uint64_t top = (g.end - bytes) / kPageSize * kPageSize;
      if (top >= lo && (out.empty() || out.back() != top)) out.push_back(top);
    }
  }
  return out;
}

std::vector<AddrRange> unmap_ranges(std::vector<AddrRange> keep, uint64_t mmap_min_addr, uint64_t task_size) {
  std::sort(keep.begin(), keep.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  std::vector<AddrRange> out;
  uint64_t at = mmap_min_addr;
  for (const AddrRange& k : keep) {
    if (k.start > at) out.push_back({at, std::min(k.start, task_size)});
    at = std::max(at, k.end);
  }
  if (at < task_size) out.push_back({at, task_size});
  return out;
}

void fix_syscall_restart(std::vector<uint8_t>& regs) {
  if (regs.size() != kUserRegsBytes) return;
  auto get = [&](size_t i) {
    int64_t v;
    std::memcpy(&v, regs.data() + i * 8, 8);
    return v;
  };
  auto put = [&](size_t i, int64_t v) { std::memcpy(regs.data() + i * 8, &v, 8); };
  constexpr size_t kRax = 10, kOrigRax = 15, kRip = 16;
  if (get(kOrigRax) < 0) return;
  switch (get(kRax)) {
    case -512:  // ERESTARTSYS
    case -513:  // ERESTARTNOINTR
    case -514:  // ERESTARTNOHAND
      put(kRax, get(kOrigRax));
      put(kRip, get(kRip) - 2);
      break;
    case -516:  // ERESTART_RESTARTBLOCK
      put(kRax, -EINTR);
      break;
    default: break;
  }
}

}  // namespace cxlpool::ckpt
