// SPDX-License-Identifier: Apache-2.0
// Process-wide state that /proc and prlimit show without stopping anything.
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

#include "capture_steps.hpp"
#include "cxlpool/ckpt/proc_text.hpp"

namespace cxlpool::ckpt::detail {
namespace {

constexpr const char* kNamespaces[] = {"mnt", "net", "pid", "uts", "ipc", "user", "cgroup", "time"};
constexpr std::string_view kDeleted = " (deleted)";

bool deleted(const std::string& path) {
  return path.size() >= kDeleted.size() && path.compare(path.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0;
}

Result<void> check_namespaces(pid_t pid) {
  std::string differ;
  for (const char* ns : kNamespaces) {
    auto theirs = read_proc_link(pid, std::string("ns/") + ns);
    if (!theirs) continue;  // a kernel without this namespace type
    char mine[256];
    const std::string self = std::string("/proc/self/ns/") + ns;
    const ssize_t n = ::readlink(self.c_str(), mine, sizeof mine);
    if (n < 0 || *theirs != std::string(mine, static_cast<std::size_t>(n))) differ += (differ.empty() ? "" : ", ") + std::string(ns);
  }
  if (!differ.empty()) return unsupported(pid, "it runs in other namespaces than the checkpointer's (" + differ + ")");
  return {};
}

Result<void> capture_mm(pid_t pid, ProcessState& p, FileTable& files) {
  auto stat = read_proc(pid, "stat");
  if (!stat) return tl::unexpected(stat.error());
  auto mm = parse_stat_mm(*stat);
  if (!mm) return tl::unexpected(mm.error());
  p.mm = std::move(*mm);
  auto auxv = read_proc(pid, "auxv");
  if (!auxv) return tl::unexpected(auxv.error());
  for (std::size_t at = 0; at + 16 <= auxv->size(); at += 16) {
    uint64_t pair[2];
    std::memcpy(pair, auxv->data() + at, sizeof pair);
    p.mm.auxv.push_back(pair[0]);
    p.mm.auxv.push_back(pair[1]);
    if (pair[0] == 0) break;  // AT_NULL
  }
  auto exe = read_proc_link(pid, "exe");
  if (!exe) return tl::unexpected(exe.error());
  if (deleted(*exe)) return unsupported(pid, "its executable " + *exe + " was deleted");
  auto index = files.add(*exe, proc_path(pid, "exe"));
  if (!index) return tl::unexpected(index.error());
  p.mm.exe_file = *index;
  return {};
}

Result<void> capture_status(pid_t pid, ProcessState& p) {
  auto text = read_proc(pid, "status");
  if (!text) return tl::unexpected(text.error());
  auto s = parse_status(*text);
  if (!s) return tl::unexpected(s.error());
  if (s->state == 'Z' || s->state == 'X') return unsupported(pid, "its thread group leader has exited");
  if (s->seccomp != 0) return unsupported(pid, "it runs under a seccomp filter");
  if (!s->has_umask) return fail(EIO, "checkpoint: /proc/" + std::to_string(pid) + "/status shows no Umask");
  p.umask = s->umask;
  Credentials& c = p.creds;
  for (int i = 0; i < 3; ++i) {
    c.uid[i] = s->uid[i];
    c.gid[i] = s->gid[i];
  }
  c.groups = s->groups;
  c.cap_inheritable = s->cap_inheritable;
  c.cap_permitted = s->cap_permitted;
  c.cap_effective = s->cap_effective;
  c.cap_bounding = s->cap_bounding;
  c.cap_ambient = s->cap_ambient;
  c.no_new_privs = s->no_new_privs;
  return {};
}

}  // namespace

Result<void> capture_process_files(pid_t pid, ProcessState& p, FileTable& files) {
  p.pid = pid;
  if (auto ns = check_namespaces(pid); !ns) return ns;
  auto comm = read_proc(pid, "comm");
  if (!comm) return tl::unexpected(comm.error());
  p.comm = comm->substr(0, comm->find('\n'));
  auto root = read_proc_link(pid, "root");
  if (!root) return tl::unexpected(root.error());
  if (*root != "/") return unsupported(pid, "its root directory is " + *root + ", not /");
  auto cwd = read_proc_link(pid, "cwd");
  if (!cwd) return tl::unexpected(cwd.error());
  if (deleted(*cwd)) return unsupported(pid, "its working directory " + *cwd + " was deleted");
  p.cwd = *cwd;
  auto timers = read_proc(pid, "timers");
  if (timers && !timers->empty()) return unsupported(pid, "it has POSIX timers (timer_create)");
  auto personality = read_proc(pid, "personality");
  if (!personality) return tl::unexpected(personality.error());
  p.personality = static_cast<uint32_t>(std::strtoul(personality->c_str(), nullptr, 16));
  // /proc/PID/limits needs only the right to read the process (which the
  // tracer has); prlimit of another uid's process needs CAP_SYS_RESOURCE.
  auto limits_text = read_proc(pid, "limits");
  if (!limits_text) return tl::unexpected(limits_text.error());
  auto limits = parse_limits(*limits_text, p.rlimits.size());
  if (!limits) return fail(limits.error().code, "checkpoint of " + std::to_string(pid) + ": " + limits.error().message);
  for (size_t r = 0; r < p.rlimits.size(); ++r) p.rlimits[r] = {(*limits)[r][0], (*limits)[r][1]};
  if (auto s = capture_status(pid, p); !s) return s;
  return capture_mm(pid, p, files);
}

}  // namespace cxlpool::ckpt::detail
