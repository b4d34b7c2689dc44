// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/ckpt/manifest_validate.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>

#include "cxlpool/ckpt/manifest_codec.hpp"

namespace cxlpool::ckpt {
namespace {

tl::unexpected<Error> broken(const std::string& rule) { return fail(EBADMSG, "checkpoint manifest: " + rule); }

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool aligned(uint64_t v) { return v % kPageSize == 0; }

// The end of `pages` pages from addr, or 0 when it would pass 2^64.
uint64_t end_of(uint64_t addr, uint64_t pages) {
  if (pages > (~0ull - addr) / kPageSize) return 0;
  return addr + pages * kPageSize;
}

bool good_path(const std::string& p) { return !p.empty() && p[0] == '/' && p.find('\0') == std::string::npos; }

Result<void> check_threads(const Manifest& m) {
  if (m.process.pid <= 0) return broken("pid " + std::to_string(m.process.pid) + " is not positive");
  if (m.threads.empty()) return broken("no threads");
  if (m.threads[0].tid != m.process.pid) return broken("the first thread is not the thread group leader");
  std::vector<int32_t> tids;
  for (const ThreadState& t : m.threads) {
    const std::string who = "thread " + std::to_string(t.tid);
    if (t.tid <= 0) return broken(who + ": tid is not positive");
    if (t.regs.size() != kRegsBytes) return broken(who + ": registers are not a user_regs_struct");
    if (t.xsave.size() < kMinXsaveBytes || t.xsave.size() > kMaxXsaveBytes) {
      return broken(who + ": xsave area of " + std::to_string(t.xsave.size()) + " bytes");
    }
    if ((t.rseq.addr == 0) != (t.rseq.len == 0) || t.rseq.len > kPageSize) {
      return broken(who + ": rseq registration out of range");
    }
    tids.push_back(t.tid);
  }
  std::sort(tids.begin(), tids.end());
  if (std::adjacent_find(tids.begin(), tids.end()) != tids.end()) return broken("two threads with one tid");
  return {};
}

Result<void> check_vmas(const Manifest& m) {
  uint64_t prev_end = 0;
  for (const Vma& v : m.vmas) {
    const std::string which = "vma " + hex(v.start) + "-" + hex(v.end);
    if (!aligned(v.start) || !aligned(v.end) || v.start >= v.end) return broken(which + ": not page aligned or empty");
    if (v.start < prev_end) return broken(which + ": not sorted or overlaps the one before");
    prev_end = v.end;
    if (static_cast<uint8_t>(v.kind) < static_cast<uint8_t>(VmaKind::kAnon) ||
        static_cast<uint8_t>(v.kind) > static_cast<uint8_t>(VmaKind::kFileSharedReadOnly)) {
      return broken(which + ": unknown kind " + std::to_string(static_cast<unsigned>(v.kind)));
    }
    const bool has_file = v.kind == VmaKind::kFilePrivate || v.kind == VmaKind::kCxlpoolRegion ||
                          v.kind == VmaKind::kFileSharedReadOnly;
    if (has_file ? v.file >= m.files.size() : v.file != kNoFile) return broken(which + ": file index out of range");
    if (!aligned(v.file_offset)) return broken(which + ": file offset not page aligned");
  }
  return {};
}

Result<void> check_runs(const Manifest& m) {
  const uint64_t data_end = m.image_data_offset + m.image_data_bytes;
  if (!aligned(m.image_data_offset) || !aligned(m.image_data_bytes) || data_end < m.image_data_offset) {
    return broken("page data area not page aligned or past 2^64");
  }
  uint64_t prev_end = 0;
  for (const PageRun& r : m.runs) {
    const std::string which = "run at " + hex(r.addr);
    const uint64_t end = end_of(r.addr, r.pages);
    if (r.pages == 0 || !aligned(r.addr) || end == 0) return broken(which + ": empty, unaligned or past 2^64");
    if (r.addr < prev_end) return broken(which + ": not sorted or overlaps the one before");
    prev_end = end;
    auto vma = std::upper_bound(m.vmas.begin(), m.vmas.end(), r.addr,
                                [](uint64_t addr, const Vma& v) { return addr < v.start; });
    if (vma == m.vmas.begin() || std::prev(vma)->end < end) return broken(which + ": not inside one vma");
    const VmaKind kind = std::prev(vma)->kind;
    if (kind != VmaKind::kAnon && kind != VmaKind::kFilePrivate) {
      return broken(which + ": inside a vma whose pages are not stored");
    }
    const uint64_t image_end = end_of(r.image_offset, r.pages);
    if (!aligned(r.image_offset) || r.image_offset < m.image_data_offset || image_end == 0 || image_end > data_end) {
      return broken(which + ": its image offset is unaligned or outside the page data area");
    }
  }
  return {};
}

Result<void> check_files_and_fds(const Manifest& m) {
  for (const FileRef& f : m.files) {
    if (!good_path(f.path)) return broken("a file path that is not absolute");
  }
  if (!m.process.cwd.empty() && !good_path(m.process.cwd)) return broken("cwd is not an absolute path");
  if (m.process.mm.exe_file != kNoFile && m.process.mm.exe_file >= m.files.size()) {
    return broken("exe file index out of range");
  }
  if (m.process.mm.auxv.size() % 2 != 0) return broken("auxv is not a list of pairs");
  if (m.process.umask > 0777) return broken("umask has bits outside 0777");
  int32_t prev = -1;
  for (const FdEntry& f : m.fds) {
    const std::string which = "fd " + std::to_string(f.fd);
    if (f.fd <= prev) return broken(which + ": fds not sorted or repeated");
    prev = f.fd;
    switch (f.kind) {
      case FdKind::kRegular:
      case FdKind::kDirectory:
        if (f.file >= m.files.size()) return broken(which + ": file index out of range");
        break;
      case FdKind::kStdio:
        if (f.fd > 2) return broken(which + ": stdio kind above fd 2");
        [[fallthrough]];
      case FdKind::kCxlpoolSocket:
        if (f.file != kNoFile) return broken(which + ": a file index for a kind without a file");
        break;
      case FdKind::kCxlpoolRegion:
        if (f.file >= m.regions.size()) return broken(which + ": region index out of range");
        break;
      default:
        return broken(which + ": unknown kind " + std::to_string(static_cast<unsigned>(f.kind)));
    }
  }
  return {};
}

Result<void> check_regions_and_hot(const Manifest& m) {
  for (const RegionRef& g : m.regions) {
    const bool descriptor_only = g.addr == 0 && g.length == 0;
    if (!descriptor_only && (!aligned(g.addr) || !aligned(g.length) || g.length == 0 || g.addr + g.length < g.addr ||
                             !aligned(g.offset))) {
      return broken("region " + g.name + ": not page aligned, empty or past 2^64");
    }
  }
  uint64_t prev = 0;
  bool first = true;
  auto run = m.runs.begin();
  for (uint64_t page : m.hot_pages) {
    if (!aligned(page) || (!first && page <= prev)) return broken("hot pages not aligned, sorted and unique");
    first = false;
    prev = page;
    while (run != m.runs.end() && end_of(run->addr, run->pages) <= page) ++run;
    if (run == m.runs.end() || page < run->addr) return broken("hot page " + hex(page) + " is not in any run");
  }
  return {};
}

}  // namespace

Result<void> validate_manifest(const Manifest& m) {
  if (m.version != kFormatVersion) {
    return fail(ENOTSUP, "checkpoint manifest: format version " + std::to_string(m.version) + ", this build reads " +
                             std::to_string(kFormatVersion));
  }
  for (auto check : {check_threads, check_vmas, check_runs, check_files_and_fds, check_regions_and_hot}) {
    if (auto ok = check(m); !ok) return ok;
  }
  return {};
}

}  // namespace cxlpool::ckpt
