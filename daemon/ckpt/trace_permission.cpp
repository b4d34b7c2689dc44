// SPDX-License-Identifier: Apache-2.0
#include "trace_permission.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace cxlpool::daemon {
namespace {

// The text after "Key:" on its line, or nullopt.
std::optional<std::string_view> field(std::string_view text, std::string_view key) {
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      return line.substr(key.size() + 1);
    }
    at = end + 1;
  }
  return std::nullopt;
}

// Reads `count` whitespace-separated numbers in `base`.
template <typename T>
bool numbers(std::string_view text, T* out, int count, int base) {
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < count; ++i) {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    auto [next, ec] = std::from_chars(p, end, out[i], base);
    if (ec != std::errc() || next == p) return false;
    p = next;
  }
  return true;
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(errno == ENOENT ? ESRCH : (errno ? errno : EIO), "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Result<ProcessCreds> parse_process_creds(std::string_view status_text) {
  ProcessCreds c;
  uint64_t ids[4];
  const auto uid = field(status_text, "Uid");
  if (!uid || !numbers(*uid, ids, 3, 10)) return fail(EPROTO, "no Uid: line");
  for (int i = 0; i < 3; ++i) c.uid[i] = static_cast<uid_t>(ids[i]);
  const auto gid = field(status_text, "Gid");
  if (!gid || !numbers(*gid, ids, 3, 10)) return fail(EPROTO, "no Gid: line");
  for (int i = 0; i < 3; ++i) c.gid[i] = static_cast<gid_t>(ids[i]);
  const auto prm = field(status_text, "CapPrm");
  if (!prm || !numbers(*prm, &c.cap_permitted, 1, 16)) return fail(EPROTO, "no CapPrm: line");
  const auto eff = field(status_text, "CapEff");
  if (!eff || !numbers(*eff, &c.cap_effective, 1, 16)) return fail(EPROTO, "no CapEff: line");
  return c;
}

Result<ProcessCreds> read_process_creds(pid_t pid) {
  auto text = read_text("/proc/" + std::to_string(pid) + "/status");
  if (!text) return tl::unexpected(text.error());
  return parse_process_creds(*text);
}

Result<bool> process_dumpable(pid_t pid, uid_t euid) {
  struct stat st {};
  const std::string path = "/proc/" + std::to_string(pid);
  if (::stat(path.c_str(), &st) != 0) return fail(errno == ENOENT ? ESRCH : errno, "stat " + path);
  return st.st_uid == euid;
}

std::string trace_refusal(uid_t client_uid, gid_t client_gid, uint64_t client_cap_effective,
                          const ProcessCreds& target, bool target_dumpable) {
  for (int i = 0; i < 3; ++i) {
    if (target.uid[i] != client_uid) {
      return "its uids are " + std::to_string(target.uid[0]) + "/" + std::to_string(target.uid[1]) + "/" +
             std::to_string(target.uid[2]) + ", the client's " + std::to_string(client_uid);
    }
    if (target.gid[i] != client_gid) {
      return "its gids are " + std::to_string(target.gid[0]) + "/" + std::to_string(target.gid[1]) + "/" +
             std::to_string(target.gid[2]) + ", the client's " + std::to_string(client_gid);
    }
  }
  if (!target_dumpable) return "it is not dumpable";
  if ((target.cap_permitted & ~client_cap_effective) != 0) return "it holds capabilities the client lacks";
  return {};
}

Result<pid_t> pidfd_pid(int pidfd) {
  auto text = read_text("/proc/self/fdinfo/" + std::to_string(pidfd));
  if (!text) return fail(EBADF, "descriptor " + std::to_string(pidfd) + " is not open");
  const auto line = field(*text, "Pid");
  long long pid = 0;
  if (!line || !numbers(*line, &pid, 1, 10)) return fail(EBADF, "the descriptor is not a pidfd");
  if (pid == -1) return fail(ESRCH, "the pidfd's process has exited");
  if (pid <= 0) return fail(EXDEV, "the pidfd's process is in a pid namespace the daemon cannot see");
  return static_cast<pid_t>(pid);
}

}  // namespace cxlpool::daemon
