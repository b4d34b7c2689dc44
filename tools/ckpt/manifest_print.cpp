// SPDX-License-Identifier: Apache-2.0
#include "manifest_print.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace cxlpool::ckpt_tool {
namespace {

using namespace ckpt;

const char* kind_name(VmaKind k) {
  switch (k) {
    case VmaKind::kAnon: return "anon";
    case VmaKind::kFilePrivate: return "file-private";
    case VmaKind::kVdso: return "vdso";
    case VmaKind::kVvar: return "vvar";
    case VmaKind::kVvarVclock: return "vvar_vclock";
    case VmaKind::kVsyscall: return "vsyscall";
    case VmaKind::kCxlpoolRegion: return "cxlpool-region";
    case VmaKind::kFileSharedReadOnly: return "file-shared-ro";
    case VmaKind::kSharedAnon: return "shared-anon";
  }
  return "?";
}

const char* fd_kind_name(FdKind k) {
  switch (k) {
    case FdKind::kRegular: return "regular";
    case FdKind::kStdio: return "stdio";
    case FdKind::kCxlpoolSocket: return "cxlpool-socket";
    case FdKind::kDirectory: return "directory";
    case FdKind::kCxlpoolRegion: return "cxlpool-region";
    case FdKind::kEventfd: return "eventfd";
    case FdKind::kPipe: return "pipe";
    case FdKind::kSocketPair: return "socketpair";
    case FdKind::kUnixListener: return "unix-listener";
  }
  return "?";
}

std::string hex(uint64_t v) { return fmt::format("0x{:x}", v); }

// The signal number of a 128-byte siginfo (si_signo, the first int).
int signo(const std::array<uint8_t, 128>& info) {
  int32_t v = 0;
  std::memcpy(&v, info.data(), sizeof v);
  return v;
}

// user_regs_struct's rip (word 16) and rsp (word 19).
uint64_t reg_word(const std::vector<uint8_t>& regs, std::size_t word) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(regs[word * 8 + i]) << (8 * i);
  return v;
}

std::string file_path(const Manifest& m, uint32_t index) { return index < m.files.size() ? m.files[index].path : ""; }

// What an fd refers to: a file's path, or a region's name.
std::string fd_target(const Manifest& m, const FdEntry& f) {
  if (f.kind == FdKind::kCxlpoolRegion) return f.file < m.regions.size() ? "region " + m.regions[f.file].name : "";
  return file_path(m, f.file);
}

const char* region_kind_name(RegionKind k) {
  switch (k) {
    case RegionKind::kNamed: return "named";
    case RegionKind::kLeased: return "leased";
    case RegionKind::kUnknown: break;
  }
  return "?";
}

}  // namespace

nlohmann::json manifest_json(const Manifest& m) {
  using nlohmann::json;
  json j;
  j["version"] = m.version;
  j["created_unix_ns"] = m.created_unix_ns;
  j["kernel_release"] = m.kernel_release;
  const ProcessState& p = m.process;
  json proc;
  proc["pid"] = p.pid;
  proc["comm"] = p.comm;
  proc["cwd"] = p.cwd;
  proc["umask"] = fmt::format("{:04o}", p.umask);
  proc["personality"] = p.personality;
  proc["uid"] = {p.creds.uid[0], p.creds.uid[1], p.creds.uid[2]};
  proc["gid"] = {p.creds.gid[0], p.creds.gid[1], p.creds.gid[2]};
  proc["groups"] = p.creds.groups;
  proc["cap_effective"] = hex(p.creds.cap_effective);
  proc["no_new_privs"] = p.creds.no_new_privs;
  json limits = json::array();
  for (const auto& l : p.rlimits) limits.push_back({l[0], l[1]});
  proc["rlimits"] = limits;
  json actions = json::object();
  for (std::size_t i = 0; i < p.sigactions.size(); ++i) {
    const SigAction& a = p.sigactions[i];
    if (a.handler == 0 && a.flags == 0 && a.mask == 0) continue;
    actions[std::to_string(i + 1)] = {{"handler", hex(a.handler)}, {"flags", hex(a.flags)},
                                      {"restorer", hex(a.restorer)}, {"mask", hex(a.mask)}};
  }
  proc["sigactions"] = actions;
  json shared = json::array();
  for (const auto& info : p.shared_pending) shared.push_back(signo(info));
  proc["shared_pending"] = shared;
  auto timer = [](const ITimer& t) { return json{{"interval_us", t.interval_us}, {"value_us", t.value_us}}; };
  proc["itimer_real"] = timer(p.itimer_real);
  proc["itimer_virtual"] = timer(p.itimer_virtual);
  proc["itimer_prof"] = timer(p.itimer_prof);
  const MmFields& mm = p.mm;
  proc["mm"] = {{"start_code", hex(mm.start_code)}, {"end_code", hex(mm.end_code)},
                {"start_data", hex(mm.start_data)}, {"end_data", hex(mm.end_data)},
                {"start_brk", hex(mm.start_brk)},   {"brk", hex(mm.brk)},
                {"start_stack", hex(mm.start_stack)}, {"arg_start", hex(mm.arg_start)},
                {"arg_end", hex(mm.arg_end)},       {"env_start", hex(mm.env_start)},
                {"env_end", hex(mm.env_end)},       {"exe", file_path(m, mm.exe_file)},
                {"auxv_entries", mm.auxv.size() / 2}};
  j["process"] = proc;
  json threads = json::array();
  for (const ThreadState& t : m.threads) {
    json pending = json::array();
    for (const auto& info : t.pending) pending.push_back(signo(info));
    threads.push_back({{"tid", t.tid},
                       {"name", t.name},
                       {"rip", hex(reg_word(t.regs, 16))},
                       {"rsp", hex(reg_word(t.regs, 19))},
                       {"xsave_bytes", t.xsave.size()},
                       {"sigmask", hex(t.sigmask)},
                       {"pending", pending},
                       {"rseq", {{"addr", hex(t.rseq.addr)}, {"len", t.rseq.len}, {"sig", hex(t.rseq.sig)}}},
                       {"clear_child_tid", hex(t.clear_child_tid)},
                       {"altstack", {{"sp", hex(t.altstack.sp)}, {"size", t.altstack.size}, {"flags", t.altstack.flags}}}});
  }
  j["threads"] = threads;
  json vmas = json::array();
  for (const Vma& v : m.vmas) {
    json e = {{"start", hex(v.start)}, {"end", hex(v.end)}, {"prot", v.prot}, {"map_flags", hex(v.map_flags)},
              {"kind", kind_name(v.kind)}, {"advice", v.madvise}};
    if (v.file != kNoFile) e["file"] = file_path(m, v.file), e["file_offset"] = v.file_offset;
    vmas.push_back(e);
  }
  j["vmas"] = vmas;
  json runs = json::array();
  for (const PageRun& r : m.runs) runs.push_back({{"addr", hex(r.addr)}, {"pages", r.pages}, {"image_offset", r.image_offset}});
  j["runs"] = runs;
  json files = json::array();
  for (const FileRef& f : m.files) {
    files.push_back({{"path", f.path}, {"dev", f.dev}, {"ino", f.ino}, {"size", f.size}, {"mtime_ns", f.mtime_ns}});
  }
  j["files"] = files;
  json fds = json::array();
  for (const FdEntry& f : m.fds) {
    json e = {{"fd", f.fd}, {"kind", fd_kind_name(f.kind)}, {"flags", fmt::format("{:o}", f.open_flags)},
              {"offset", f.offset}};
    if (f.file != kNoFile) e["path"] = fd_target(m, f);
    for (const FdObject& o : m.fd_objects) {
      if (o.fd != f.fd) continue;
      e["object"] = {{"id", o.object}, {"peer", o.peer}, {"counter", o.counter}, {"detail", o.detail},
                     {"contents_bytes", o.contents.size()}};
      if (f.kind == FdKind::kUnixListener) {
        // The address as /proc/net/unix shows it: an abstract name's NULs as '@'.
        std::string address(o.contents.begin(), o.contents.end());
        std::replace(address.begin(), address.end(), '\0', '@');
        e["object"]["address"] = address;
      }
    }
    fds.push_back(e);
  }
  j["fds"] = fds;
  json regions = json::array();
  for (const RegionRef& r : m.regions) {
    regions.push_back({{"addr", hex(r.addr)}, {"length", r.length}, {"name", r.name}, {"region_id", r.region_id},
                       {"prot", r.prot}, {"offset", r.offset}, {"kind", region_kind_name(r.kind)},
                       {"writable", r.writable}});
  }
  j["regions"] = regions;
  json leases = json::array();
  for (const Lease& l : m.leases) {
    uint64_t stored = 0;
    for (const LeaseRun& r : l.runs) stored += r.pages * kPageSize;
    leases.push_back({{"region_id", l.region_id}, {"size", l.size}, {"tier", l.tier_id}, {"runs", l.runs.size()},
                      {"stored_bytes", stored}});
  }
  j["leases"] = leases;
  j["cxlpool_socket"] = m.cxlpool_socket;
  j["hot_pages"] = m.hot_pages.size();
  j["image_data_offset"] = m.image_data_offset;
  j["image_data_bytes"] = m.image_data_bytes;
  return j;
}

std::string manifest_text(const Manifest& m) {
  std::string out;
  const ProcessState& p = m.process;
  uint64_t pages = 0;
  for (const PageRun& r : m.runs) pages += r.pages;
  out += fmt::format("checkpoint of pid {} ({}), format version {}, kernel {}\n", p.pid, p.comm, m.version,
                     m.kernel_release);
  out += fmt::format("  cwd {}  umask {:04o}  uid {}  gid {}  exe {}\n", p.cwd, p.umask, p.creds.uid[0],
                     p.creds.gid[0], file_path(m, p.mm.exe_file));
  out += fmt::format("  {} threads, {} vmas, {} runs ({} pages, {} bytes of page data), {} files, {} fds, {} regions\n",
                     m.threads.size(), m.vmas.size(), m.runs.size(), pages, m.image_data_bytes, m.files.size(),
                     m.fds.size(), m.regions.size());
  out += fmt::format("  brk {} (start {})  itimer real {}us every {}us  {} shared pending signals\n", hex(p.mm.brk),
                     hex(p.mm.start_brk), p.itimer_real.value_us, p.itimer_real.interval_us, p.shared_pending.size());
  out += "threads:\n";
  for (const ThreadState& t : m.threads) {
    out += fmt::format("  {:>7}  {:<15}  rip {:>18}  sigmask {:>18}  pending {}  rseq {}  xsave {} bytes\n", t.tid,
                       t.name, hex(reg_word(t.regs, 16)), hex(t.sigmask), t.pending.size(), hex(t.rseq.addr),
                       t.xsave.size());
  }
  out += "vmas:\n";
  for (const Vma& v : m.vmas) {
    out += fmt::format("  {:>14}-{:<14} {}{}{} {:<14} {}\n", hex(v.start), hex(v.end), (v.prot & 1) ? 'r' : '-',
                       (v.prot & 2) ? 'w' : '-', (v.prot & 4) ? 'x' : '-', kind_name(v.kind), file_path(m, v.file));
  }
  out += "fds:\n";
  for (const FdEntry& f : m.fds) {
    out += fmt::format("  {:>4} {:<14} offset {:<10} {}\n", f.fd, fd_kind_name(f.kind), f.offset, fd_target(m, f));
  }
  return out;
}

}  // namespace cxlpool::ckpt_tool
