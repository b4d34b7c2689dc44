// SPDX-License-Identifier: Apache-2.0
// Writes every section of the format in type order (fd objects and leases
// only when there are some, so that images without them stay byte for byte as before) (the decoder does
// not depend on the order; fixed order keeps encodings comparable).
#include <functional>

#include "cxlpool/ckpt/manifest_codec.hpp"
#include "le_bytes.hpp"

namespace cxlpool::ckpt {
namespace {

using detail::LeWriter;

void section(LeWriter& w, SectionType type, const std::function<void(LeWriter&)>& body) {
  w.u32(static_cast<uint32_t>(type));
  const std::size_t length_at = w.size();
  w.u32(0);
  body(w);
  w.patch_u32(length_at, static_cast<uint32_t>(w.size() - length_at - 4));
}

void siginfos(LeWriter& w, const std::vector<std::array<uint8_t, 128>>& infos) {
  w.u32(static_cast<uint32_t>(infos.size()));
  for (const auto& info : infos) w.raw(info.data(), info.size());
}

void process(LeWriter& w, const ProcessState& p) {
  w.i32(p.pid);
  w.str(p.comm);
  w.str(p.cwd);
  w.u32(p.umask);
  w.u32(p.personality);
  for (const auto& limit : p.rlimits) {
    w.u64(limit[0]);
    w.u64(limit[1]);
  }
  for (const auto& a : p.sigactions) {
    w.u64(a.handler);
    w.u64(a.flags);
    w.u64(a.restorer);
    w.u64(a.mask);
  }
  for (const ITimer* t : {&p.itimer_real, &p.itimer_virtual, &p.itimer_prof}) {
    w.u64(t->interval_us);
    w.u64(t->value_us);
  }
}

void credentials(LeWriter& w, const Credentials& c) {
  for (uint32_t id : c.uid) w.u32(id);
  for (uint32_t id : c.gid) w.u32(id);
  w.u32(static_cast<uint32_t>(c.groups.size()));
  for (uint32_t g : c.groups) w.u32(g);
  for (uint64_t cap : {c.cap_inheritable, c.cap_permitted, c.cap_effective, c.cap_bounding, c.cap_ambient}) w.u64(cap);
  w.u32(c.no_new_privs);
}

void mm(LeWriter& w, const MmFields& m) {
  for (uint64_t v : {m.start_code, m.end_code, m.start_data, m.end_data, m.start_brk, m.brk, m.start_stack,
                     m.arg_start, m.arg_end, m.env_start, m.env_end}) {
    w.u64(v);
  }
  w.u32(m.exe_file);
  w.u32(static_cast<uint32_t>(m.auxv.size()));
  for (uint64_t v : m.auxv) w.u64(v);
}

void thread(LeWriter& w, const ThreadState& t) {
  w.i32(t.tid);
  w.blob(t.regs.data(), t.regs.size());
  w.blob(t.xsave.data(), t.xsave.size());
  w.u64(t.sigmask);
  siginfos(w, t.pending);
  w.u64(t.rseq.addr);
  w.u32(t.rseq.len);
  w.u32(t.rseq.sig);
  w.u64(t.clear_child_tid);
  w.u64(t.altstack.sp);
  w.u64(t.altstack.size);
  w.i32(t.altstack.flags);
  w.str(t.name);
}

}  // namespace

std::vector<std::byte> encode_manifest(const Manifest& m) {
  std::vector<std::byte> out;
  LeWriter w(out);
  section(w, SectionType::kInfo, [&](LeWriter& s) {
    s.u32(m.version);
    s.u64(m.created_unix_ns);
    s.str(m.kernel_release);
    s.u64(m.image_data_offset);
    s.u64(m.image_data_bytes);
  });
  section(w, SectionType::kProcess, [&](LeWriter& s) { process(s, m.process); });
  section(w, SectionType::kCredentials, [&](LeWriter& s) { credentials(s, m.process.creds); });
  section(w, SectionType::kMm, [&](LeWriter& s) { mm(s, m.process.mm); });
  section(w, SectionType::kSharedPending, [&](LeWriter& s) { siginfos(s, m.process.shared_pending); });
  for (const ThreadState& t : m.threads) section(w, SectionType::kThread, [&](LeWriter& s) { thread(s, t); });
  section(w, SectionType::kVmas, [&](LeWriter& s) {
    s.u32(static_cast<uint32_t>(m.vmas.size()));
    for (const Vma& v : m.vmas) {
      s.u64(v.start);
      s.u64(v.end);
      s.u32(v.prot);
      s.u32(v.map_flags);
      s.u8(static_cast<uint8_t>(v.kind));
      s.u32(v.file);
      s.u64(v.file_offset);
      s.u32(v.madvise);
    }
  });
  section(w, SectionType::kRuns, [&](LeWriter& s) {
    s.u32(static_cast<uint32_t>(m.runs.size()));
    for (const PageRun& r : m.runs) {
      s.u64(r.addr);
      s.u64(r.pages);
      s.u64(r.image_offset);
    }
  });
  section(w, SectionType::kFiles, [&](LeWriter& s) {
    s.u32(static_cast<uint32_t>(m.files.size()));
    for (const FileRef& f : m.files) {
      s.str(f.path);
      s.u64(f.dev);
      s.u64(f.ino);
      s.u64(f.size);
      s.i64(f.mtime_ns);
    }
  });
  section(w, SectionType::kFds, [&](LeWriter& s) {
    s.u32(static_cast<uint32_t>(m.fds.size()));
    for (const FdEntry& f : m.fds) {
      s.i32(f.fd);
      s.u8(static_cast<uint8_t>(f.kind));
      s.u32(f.file);
      s.u32(f.open_flags);
      s.u64(f.offset);
    }
  });
  if (!m.fd_objects.empty()) {
    section(w, SectionType::kFdObjects, [&](LeWriter& s) {
      s.u32(static_cast<uint32_t>(m.fd_objects.size()));
      for (const FdObject& o : m.fd_objects) {
        s.i32(o.fd);
        s.u64(o.object);
        s.u64(o.peer);
        s.u64(o.counter);
        s.u32(o.detail);
        s.blob(o.contents.data(), o.contents.size());
      }
    });
  }
  section(w, SectionType::kRegions, [&](LeWriter& s) {
    s.u32(static_cast<uint32_t>(m.regions.size()));
    for (const RegionRef& r : m.regions) {
      s.u64(r.addr);
      s.u64(r.length);
      s.str(r.name);
      s.u64(r.region_id);
      s.u32(r.prot);
    }
  });
  if (!m.regions.empty() || !m.cxlpool_socket.empty()) {
    section(w, SectionType::kClient, [&](LeWriter& s) {
      s.str(m.cxlpool_socket);
      s.u32(static_cast<uint32_t>(m.regions.size()));
      for (const RegionRef& r : m.regions) {
        s.u64(r.offset);
        s.u8(static_cast<uint8_t>(r.kind));
        s.u8(r.writable ? 1 : 0);
      }
    });
  }
  if (!m.leases.empty()) {
    section(w, SectionType::kLeases, [&](LeWriter& s) {
      s.u32(static_cast<uint32_t>(m.leases.size()));
      for (const Lease& l : m.leases) {
        s.u64(l.region_id);
        s.u64(l.size);
        s.u32(l.tier_id);
        s.u32(static_cast<uint32_t>(l.runs.size()));
        for (const LeaseRun& r : l.runs) {
          s.u64(r.offset);
          s.u64(r.pages);
          s.u64(r.image_offset);
        }
      }
    });
  }
  section(w, SectionType::kHotPages, [&](LeWriter& s) {
    s.u32(static_cast<uint32_t>(m.hot_pages.size()));
    for (uint64_t page : m.hot_pages) s.u64(page);
  });
  return out;
}

}  // namespace cxlpool::ckpt
