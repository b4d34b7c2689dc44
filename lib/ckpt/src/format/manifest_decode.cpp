// SPDX-License-Identifier: Apache-2.0
// Reads a manifest from hostile bytes: every length and count is checked
// against what is left before anything is allocated, every known section is
// read to its exact end, then the whole is held to validate_manifest.
#include <bitset>
#include <string>

#include "cxlpool/ckpt/manifest_codec.hpp"
#include "cxlpool/ckpt/manifest_validate.hpp"
#include "le_bytes.hpp"

namespace cxlpool::ckpt {
namespace {

using detail::LeReader;

constexpr uint64_t kSiginfoBytes = 128;

std::string section_name(SectionType t) {
  switch (t) {
    case SectionType::kInfo: return "info";
    case SectionType::kProcess: return "process";
    case SectionType::kCredentials: return "credentials";
    case SectionType::kMm: return "mm";
    case SectionType::kSharedPending: return "shared pending signals";
    case SectionType::kThread: return "thread";
    case SectionType::kVmas: return "vmas";
    case SectionType::kRuns: return "runs";
    case SectionType::kFiles: return "files";
    case SectionType::kFds: return "fds";
    case SectionType::kRegions: return "regions";
    case SectionType::kClient: return "client";
    case SectionType::kHotPages: return "hot pages";
    case SectionType::kFdObjects: return "fd objects";
    case SectionType::kLeases: return "leases";
  }
  return "section " + std::to_string(static_cast<uint32_t>(t));
}

void siginfos(LeReader& r, std::vector<std::array<uint8_t, 128>>& out) {
  const uint32_t n = r.count(kSiginfoBytes);
  out.resize(n);
  for (auto& info : out) r.raw(info.data(), info.size());
}

void process(LeReader& r, ProcessState& p) {
  p.pid = r.i32();
  p.comm = r.str(kMaxStringBytes);
  p.cwd = r.str(kMaxStringBytes);
  p.umask = r.u32();
  p.personality = r.u32();
  for (auto& limit : p.rlimits) {
    limit[0] = r.u64();
    limit[1] = r.u64();
  }
  for (auto& a : p.sigactions) {
    a.handler = r.u64();
    a.flags = r.u64();
    a.restorer = r.u64();
    a.mask = r.u64();
  }
  for (ITimer* t : {&p.itimer_real, &p.itimer_virtual, &p.itimer_prof}) {
    t->interval_us = r.u64();
    t->value_us = r.u64();
  }
}

void credentials(LeReader& r, Credentials& c) {
  for (uint32_t& id : c.uid) id = r.u32();
  for (uint32_t& id : c.gid) id = r.u32();
  c.groups.resize(r.count(4));
  for (uint32_t& g : c.groups) g = r.u32();
  for (uint64_t* cap : {&c.cap_inheritable, &c.cap_permitted, &c.cap_effective, &c.cap_bounding, &c.cap_ambient}) {
    *cap = r.u64();
  }
  c.no_new_privs = r.u32();
}

void mm(LeReader& r, MmFields& m) {
  for (uint64_t* v : {&m.start_code, &m.end_code, &m.start_data, &m.end_data, &m.start_brk, &m.brk, &m.start_stack,
                      &m.arg_start, &m.arg_end, &m.env_start, &m.env_end}) {
    *v = r.u64();
  }
  m.exe_file = r.u32();
  m.auxv.resize(r.count(8));
  for (uint64_t& v : m.auxv) v = r.u64();
}

void blob(LeReader& r, std::vector<uint8_t>& out, uint32_t max_bytes) {
  const uint32_t n = r.u32();
  if (n > max_bytes) r.fail();
  auto bytes = r.take(r.ok() ? n : 0);
  out.resize(bytes.size());
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
}

void thread(LeReader& r, ThreadState& t) {
  t.tid = r.i32();
  blob(r, t.regs, kRegsBytes);
  blob(r, t.xsave, kMaxXsaveBytes);
  t.sigmask = r.u64();
  siginfos(r, t.pending);
  t.rseq.addr = r.u64();
  t.rseq.len = r.u32();
  t.rseq.sig = r.u32();
  t.clear_child_tid = r.u64();
  t.altstack.sp = r.u64();
  t.altstack.size = r.u64();
  t.altstack.flags = r.i32();
  t.name = r.str(kMaxStringBytes);  // its length is validate_manifest's to judge
}

void vmas(LeReader& r, std::vector<Vma>& out) {
  out.resize(r.count(41));
  for (Vma& v : out) {
    v.start = r.u64();
    v.end = r.u64();
    v.prot = r.u32();
    v.map_flags = r.u32();
    v.kind = static_cast<VmaKind>(r.u8());
    v.file = r.u32();
    v.file_offset = r.u64();
    v.madvise = r.u32();
  }
}

void runs(LeReader& r, std::vector<PageRun>& out) {
  out.resize(r.count(24));
  for (PageRun& run : out) {
    run.addr = r.u64();
    run.pages = r.u64();
    run.image_offset = r.u64();
  }
}

void files(LeReader& r, std::vector<FileRef>& out) {
  out.resize(r.count(36));
  for (FileRef& f : out) {
    f.path = r.str(kMaxStringBytes);
    f.dev = r.u64();
    f.ino = r.u64();
    f.size = r.u64();
    f.mtime_ns = r.i64();
  }
}

void fds(LeReader& r, std::vector<FdEntry>& out) {
  out.resize(r.count(21));
  for (FdEntry& f : out) {
    f.fd = r.i32();
    f.kind = static_cast<FdKind>(r.u8());
    f.file = r.u32();
    f.open_flags = r.u32();
    f.offset = r.u64();
  }
}

void fd_objects(LeReader& r, std::vector<FdObject>& out) {
  out.resize(r.count(36));
  for (FdObject& o : out) {
    o.fd = r.i32();
    o.object = r.u64();
    o.peer = r.u64();
    o.counter = r.u64();
    o.detail = r.u32();
    blob(r, o.contents, kMaxPipeContentsBytes);
  }
}

void regions(LeReader& r, std::vector<RegionRef>& out) {
  out.resize(r.count(32));
  for (RegionRef& g : out) {
    g.addr = r.u64();
    g.length = r.u64();
    g.name = r.str(kMaxStringBytes);
    g.region_id = r.u64();
    g.prot = r.u32();
  }
}

// Read after every other section: its list runs parallel to the regions.
struct ClientExtras {
  std::string socket;
  std::vector<RegionRef> regions;  // offset, kind, writable only
};

void client(LeReader& r, ClientExtras& out) {
  out.socket = r.str(kMaxStringBytes);
  out.regions.resize(r.count(10));
  for (RegionRef& g : out.regions) {
    g.offset = r.u64();
    g.kind = static_cast<RegionKind>(r.u8());
    const uint8_t writable = r.u8();
    if (writable > 1) g.kind = static_cast<RegionKind>(0xff);  // refused below
    g.writable = writable == 1;
  }
}

void leases(LeReader& r, std::vector<Lease>& out) {
  out.resize(r.count(24));
  for (Lease& l : out) {
    l.region_id = r.u64();
    l.size = r.u64();
    l.tier_id = r.u32();
    l.runs.resize(r.count(24));
    for (LeaseRun& run : l.runs) {
      run.offset = r.u64();
      run.pages = r.u64();
      run.image_offset = r.u64();
    }
  }
}

void hot_pages(LeReader& r, std::vector<uint64_t>& out) {
  out.resize(r.count(8));
  for (uint64_t& page : out) page = r.u64();
}

}  // namespace

Result<Manifest> decode_manifest(std::span<const std::byte> bytes) {
  Manifest m;
  m.version = 0;
  ClientExtras extras;
  std::bitset<16> seen;
  LeReader top(bytes);
  while (top.remaining() > 0) {
    const uint32_t raw_type = top.u32();
    const uint32_t length = top.u32();
    auto payload = top.take(length);
    if (!top.ok()) return fail(EBADMSG, "checkpoint manifest: section header or payload runs past the end");
    const auto type = static_cast<SectionType>(raw_type);
    const bool known = raw_type >= static_cast<uint32_t>(SectionType::kInfo) &&
                       raw_type <= static_cast<uint32_t>(SectionType::kLeases);
    if (!known) {
      if (raw_type & kSectionMustUnderstand) {
        return fail(ENOTSUP, "checkpoint manifest: section type " + std::to_string(raw_type) +
                                 " must be understood and is unknown to this build");
      }
      continue;
    }
    if (type != SectionType::kThread && seen.test(raw_type)) {
      return fail(EBADMSG, "checkpoint manifest: duplicate " + section_name(type) + " section");
    }
    seen.set(raw_type);
    LeReader r(payload);
    switch (type) {
      case SectionType::kInfo:
        m.version = r.u32();
        m.created_unix_ns = r.u64();
        m.kernel_release = r.str(kMaxStringBytes);
        m.image_data_offset = r.u64();
        m.image_data_bytes = r.u64();
        // Another version's sections may not read as this one's: say so
        // before one of them fails as malformed.
        if (auto same = check_format_version(m.version); r.ok() && !same) return tl::unexpected(same.error());
        break;
      case SectionType::kProcess: process(r, m.process); break;
      case SectionType::kCredentials: credentials(r, m.process.creds); break;
      case SectionType::kMm: mm(r, m.process.mm); break;
      case SectionType::kSharedPending: siginfos(r, m.process.shared_pending); break;
      case SectionType::kThread: thread(r, m.threads.emplace_back()); break;
      case SectionType::kVmas: vmas(r, m.vmas); break;
      case SectionType::kRuns: runs(r, m.runs); break;
      case SectionType::kFiles: files(r, m.files); break;
      case SectionType::kFds: fds(r, m.fds); break;
      case SectionType::kRegions: regions(r, m.regions); break;
      case SectionType::kHotPages: hot_pages(r, m.hot_pages); break;
      case SectionType::kClient: client(r, extras); break;
      case SectionType::kFdObjects: fd_objects(r, m.fd_objects); break;
      case SectionType::kLeases: leases(r, m.leases); break;
    }
    if (!r.ok()) return fail(EBADMSG, "checkpoint manifest: " + section_name(type) + " section is truncated or a length in it is out of range");
    if (!r.done()) return fail(EBADMSG, "checkpoint manifest: " + section_name(type) + " section has trailing bytes");
  }
  for (SectionType required : {SectionType::kInfo, SectionType::kProcess, SectionType::kCredentials,
                               SectionType::kMm, SectionType::kThread, SectionType::kVmas, SectionType::kRuns,
                               SectionType::kFiles, SectionType::kFds}) {
    if (!seen.test(static_cast<uint32_t>(required))) {
      return fail(EBADMSG, "checkpoint manifest: no " + section_name(required) + " section");
    }
  }
  if (seen.test(static_cast<uint32_t>(SectionType::kClient))) {
    if (extras.regions.size() != m.regions.size()) {
      return fail(EBADMSG, "checkpoint manifest: the client section lists " + std::to_string(extras.regions.size()) +
                               " regions, the regions section " + std::to_string(m.regions.size()));
    }
    m.cxlpool_socket = std::move(extras.socket);
    for (size_t i = 0; i < m.regions.size(); ++i) {
      const RegionRef& x = extras.regions[i];
      if (static_cast<uint8_t>(x.kind) > static_cast<uint8_t>(RegionKind::kLeased)) {
        return fail(EBADMSG, "checkpoint manifest: region " + std::to_string(i) + " has an unknown kind or flag");
      }
      m.regions[i].offset = x.offset;
      m.regions[i].kind = x.kind;
      m.regions[i].writable = x.writable;
    }
  }
  if (auto valid = validate_manifest(m); !valid) return tl::unexpected(valid.error());
  return m;
}

}  // namespace cxlpool::ckpt
