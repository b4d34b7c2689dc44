// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/ckpt/manifest_validate.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
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
    if (t.name.size() > kMaxThreadNameBytes || t.name.find('\0') != std::string::npos) {
      return broken(who + ": a name of more than " + std::to_string(kMaxThreadNameBytes) + " bytes or with a NUL");
    }
    tids.push_back(t.tid);
  }
  std::sort(tids.begin(), tids.end());
  if (std::adjacent_find(tids.begin(), tids.end()) != tids.end()) return broken("two threads with one tid");
  return {};
}

Result<void> check_vmas(const Manifest& m) {
  uint64_t prev_end = 0;
  uint32_t shared_objects = 0;  // ids of kSharedAnon objects are given in order of first use
  for (const Vma& v : m.vmas) {
    const std::string which = "vma " + hex(v.start) + "-" + hex(v.end);
    if (!aligned(v.start) || !aligned(v.end) || v.start >= v.end) return broken(which + ": not page aligned or empty");
    if (v.start < prev_end) return broken(which + ": not sorted or overlaps the one before");
    prev_end = v.end;
    if (static_cast<uint8_t>(v.kind) < static_cast<uint8_t>(VmaKind::kAnon) ||
        static_cast<uint8_t>(v.kind) > static_cast<uint8_t>(VmaKind::kSharedAnon)) {
      return broken(which + ": unknown kind " + std::to_string(static_cast<unsigned>(v.kind)));
    }
    if (v.kind == VmaKind::kSharedAnon) {
      if (v.file > shared_objects) return broken(which + ": shared object id out of order");
      if (v.file == shared_objects) ++shared_objects;
      if (v.file_offset > kMaxSharedObjectBytes || v.end - v.start > kMaxSharedObjectBytes - v.file_offset)
        return broken(which + ": its offset in the shared object is past the largest object");
      if (!aligned(v.file_offset)) return broken(which + ": shared object offset not page aligned");
      continue;
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
    if (kind != VmaKind::kAnon && kind != VmaKind::kFilePrivate && kind != VmaKind::kSharedAnon) {
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
      case FdKind::kEventfd:
      case FdKind::kPipe:
      case FdKind::kSocketPair:
      case FdKind::kUnixListener:
        if (f.file != kNoFile) return broken(which + ": a file index for a kind without a file");
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

bool has_object(FdKind kind) {
  return kind == FdKind::kEventfd || kind == FdKind::kPipe || kind == FdKind::kSocketPair ||
         kind == FdKind::kUnixListener;
}

// A listener's address: an abstract name (a NUL, then at least one byte:
// a NUL alone would ask bind for a made-up name) or an absolute path
// without NULs, within sun_path.
bool good_unix_address(const std::vector<uint8_t>& a) {
  if (a.size() < 2 || a.size() > kMaxUnixAddressBytes) return false;
  if (a[0] == 0) return true;
  return a[0] == '/' && std::find(a.begin(), a.end(), uint8_t{0}) == a.end();
}

// The first fd of each object names what every fd of that object must agree on.
Result<void> check_object_agrees(const FdObject& o, const FdObject& first, FdKind kind, const std::string& which) {
  if (o.counter != first.counter || o.detail != first.detail || o.peer != first.peer ||
      (kind == FdKind::kUnixListener && o.contents != first.contents)) {
    return broken(which + ": disagrees with fd " + std::to_string(first.fd) + " of the same object");
  }
  if (kind != FdKind::kUnixListener && !o.contents.empty()) {
    return broken(which + ": pipe contents on other than the pipe's first fd");
  }
  return {};
}

Result<void> check_one_object(const FdObject& o, const FdEntry& e, const std::string& which) {
  switch (e.kind) {
    case FdKind::kEventfd:
      if ((o.detail & ~kEventfdSemaphore) != 0 || o.peer != 0 || !o.contents.empty() || o.counter == ~0ull) {
        return broken(which + ": eventfd flags, counter or contents out of range");
      }
      return {};
    case FdKind::kPipe: {
      const uint32_t access = e.open_flags & 3u;
      if (access != 0 && access != 1) return broken(which + ": a pipe end opened other than read-only or write-only");
      const bool power_of_two = (o.detail & (o.detail - 1)) == 0;
      if (o.detail < kPageSize || o.detail > kMaxPipeBytes || !power_of_two || o.peer != 0 || o.counter != 0) {
        return broken(which + ": pipe capacity " + std::to_string(o.detail) + " out of range");
      }
      if (o.contents.size() > o.detail) return broken(which + ": more pipe contents than the pipe holds");
      return {};
    }
    case FdKind::kSocketPair:
      if ((o.detail != 1 && o.detail != 2 && o.detail != 5) || o.peer == o.object || o.counter != 0 ||
          !o.contents.empty()) {
        return broken(which + ": socketpair type or peer out of range");
      }
      return {};
    case FdKind::kUnixListener:
      if ((o.detail != 1 && o.detail != 5) || o.peer != 0) {
        return broken(which + ": listening socket type " + std::to_string(o.detail) + " is not stream or seqpacket");
      }
      if (o.counter > kMaxListenBacklog) return broken(which + ": listen backlog out of range");
      if (!good_unix_address(o.contents)) {
        return broken(which + ": listening socket address of " + std::to_string(o.contents.size()) +
                      " bytes is neither an abstract name nor an absolute path within 108 bytes");
      }
      return {};
    default:
      return broken(which + ": an fd object for a kind that has none");
  }
}

// Every eventfd, pipe end and socketpair end has its object record; a pipe
// has a read and a write end; a socketpair end's peer is the other end.
Result<void> check_fd_objects(const Manifest& m) {
  std::size_t at = 0;
  for (const FdEntry& e : m.fds) {
    if (!has_object(e.kind)) continue;
    if (at >= m.fd_objects.size() || m.fd_objects[at].fd != e.fd) {
      return broken("fd " + std::to_string(e.fd) + ": no fd object record, or records not sorted by fd");
    }
    ++at;
  }
  if (at != m.fd_objects.size()) return broken("an fd object record for an fd that has none");
  struct Ends {
    const FdObject* first = nullptr;
    bool read = false, write = false;
  };
  std::map<std::pair<FdKind, uint64_t>, Ends> objects;
  auto find = [&](FdKind kind, uint64_t object) -> Ends* {
    auto it = objects.find({kind, object});
    return it == objects.end() ? nullptr : &it->second;
  };
  at = 0;
  for (const FdEntry& e : m.fds) {
    if (!has_object(e.kind)) continue;
    const FdObject& o = m.fd_objects[at++];
    const std::string which = "fd " + std::to_string(e.fd);
    if (auto ok = check_one_object(o, e, which); !ok) return ok;
    Ends* ends = find(e.kind, o.object);
    if (ends == nullptr) {
      ends = &objects[{e.kind, o.object}];
      ends->first = &o;
    } else if (auto ok = check_object_agrees(o, *ends->first, e.kind, which); !ok) {
      return ok;
    }
    ((e.open_flags & 3u) == 0 ? ends->read : ends->write) = true;
  }
  for (const auto& [key, ends] : objects) {
    const std::string which = "fd " + std::to_string(ends.first->fd);
    if (key.first == FdKind::kPipe && !(ends.read && ends.write)) {
      return broken(which + ": a pipe without both a read and a write end");
    }
    if (key.first == FdKind::kSocketPair) {
      const Ends* peer = find(FdKind::kSocketPair, ends.first->peer);
      if (peer == nullptr || peer->first->peer != key.second || peer->first->detail != ends.first->detail) {
        return broken(which + ": a socketpair end without its peer");
      }
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

// Leases: one per leased region id, each with its stored pages inside the
// region and the page data area; the regions that name one fit inside it.
Result<void> check_leases(const Manifest& m) {
  const uint64_t data_end = m.image_data_offset + m.image_data_bytes;
  uint64_t prev_id = 0;
  for (const Lease& l : m.leases) {
    const std::string which = "lease of region " + std::to_string(l.region_id);
    if (l.region_id <= prev_id) return broken(which + ": region ids not positive, sorted and unique");
    prev_id = l.region_id;
    if (l.size == 0 || !aligned(l.size) || l.size > kMaxLeaseBytes) {
      return broken(which + ": size " + std::to_string(l.size) + " is empty, unaligned or past 2^47");
    }
    uint64_t prev_end = 0;
    for (const LeaseRun& r : l.runs) {
      const std::string run = which + ": run at offset " + hex(r.offset);
      const uint64_t end = end_of(r.offset, r.pages);
      if (r.pages == 0 || !aligned(r.offset) || end == 0 || end > l.size) {
        return broken(run + ": empty, unaligned or past the region's end");
      }
      if (r.offset < prev_end) return broken(run + ": not sorted or overlaps the one before");
      prev_end = end;
      const uint64_t image_end = end_of(r.image_offset, r.pages);
      if (!aligned(r.image_offset) || r.image_offset < m.image_data_offset || image_end == 0 || image_end > data_end) {
        return broken(run + ": its image offset is unaligned or outside the page data area");
      }
    }
  }
  auto lease_of = [&](uint64_t id) -> const Lease* {
    auto it = std::lower_bound(m.leases.begin(), m.leases.end(), id,
                               [](const Lease& l, uint64_t v) { return l.region_id < v; });
    return it != m.leases.end() && it->region_id == id ? &*it : nullptr;
  };
  std::vector<uint64_t> named;
  for (const RegionRef& g : m.regions) {
    const Lease* lease = lease_of(g.region_id);
    if (g.kind != RegionKind::kLeased) {
      if (lease != nullptr) return broken("region " + std::to_string(g.region_id) + ": a lease of a region not leased");
      continue;
    }
    if (lease == nullptr) return broken("leased region " + std::to_string(g.region_id) + ": no lease record");
    if (g.offset > lease->size || g.length > lease->size - g.offset) {
      return broken("leased region " + std::to_string(g.region_id) + ": a mapping past the region's end");
    }
    named.push_back(g.region_id);
  }
  std::sort(named.begin(), named.end());
  named.erase(std::unique(named.begin(), named.end()), named.end());
  if (named.size() != m.leases.size()) return broken("a lease record no leased region names");
  return {};
}

}  // namespace

Result<void> check_format_version(uint32_t version) {
  if (version == kFormatVersion) return {};
  return fail(ENOTSUP, "checkpoint manifest: format version " + std::to_string(version) + ", this build reads " +
                           std::to_string(kFormatVersion));
}

Result<void> validate_manifest(const Manifest& m) {
  if (auto ok = check_format_version(m.version); !ok) return ok;
  for (auto check : {check_threads, check_vmas, check_runs, check_files_and_fds, check_fd_objects, check_regions_and_hot,
                     check_leases}) {
    if (auto ok = check(m); !ok) return ok;
  }
  return {};
}

}  // namespace cxlpool::ckpt
