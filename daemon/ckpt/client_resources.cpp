// SPDX-License-Identifier: Apache-2.0
#include "client_resources.hpp"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::daemon {

std::vector<ckpt::CaptureOptions::RegionFile> pool_region_files(const RegionPool& pool, const LeaseHolderFn& holder) {
  std::vector<ckpt::CaptureOptions::RegionFile> out;
  for (const auto& [id, region] : pool.regions()) {
    struct stat st {};
    if (!region->fd || ::fstat(region->fd.get(), &st) != 0) continue;
    ckpt::CaptureOptions::RegionFile f;
    f.dev = static_cast<uint64_t>(st.st_dev);
    f.ino = st.st_ino;
    f.region.region_id = id;
    f.region.name = region->name;
    const bool named = region->kind == proto::RegionKind::kNamed && !region->name.empty() && !region->unlinked;
    f.region.kind = named ? ckpt::RegionKind::kNamed : ckpt::RegionKind::kLeased;
    f.size = region->size;
    f.tier_id = region->tier_id;
    // A system region without a name (a service's) is leased by no client.
    if (!named && region->kind == proto::RegionKind::kLeased && !region->system && region->lease_client != 0) {
      // A restored clone's library holds the recorded id, which a second
      // restore must alias again.
      const LeaseHolder h = holder(region->lease_client, id);
      f.lease_owner = h.pid;
      if (h.id != 0) f.region.region_id = h.id;
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<uint64_t> control_socket_inodes(pid_t pid, int pidfd, const std::string& socket_path) {
  std::vector<uint64_t> out;
  if (pidfd < 0 || socket_path.empty()) return out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int target_fd = std::atoi(e->d_name);
    struct stat st {};
    if (::stat((dir + "/" + e->d_name).c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    UniqueFd mine(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, target_fd, 0)));
    if (!mine) continue;
    sockaddr_un peer{};
    socklen_t len = sizeof peer;
    if (::getpeername(mine.get(), reinterpret_cast<sockaddr*>(&peer), &len) != 0 || peer.sun_family != AF_UNIX)
      continue;
    const size_t path_bytes = len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
    const std::string name(peer.sun_path, ::strnlen(peer.sun_path, path_bytes));
    if (name == socket_path) out.push_back(st.st_ino);
  }
  ::closedir(d);
  return out;
}

}  // namespace cxlpool::daemon
