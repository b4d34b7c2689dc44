// SPDX-License-Identifier: Apache-2.0
// A link in a shared file ("directly attached" engines: the frontend and the
// backend name the same file, on tmpfs, /dev/shm, hugetlbfs or a devdax
// device), mapped MAP_SHARED.
//
// Liveness: the serving backend holds an open-file-description write lock
// on the link's first byte. The kernel drops it when the backend dies,
// however it dies, so a frontend asks backend_alive() to tell a dead backend
// from a slow one, and a second backend for the same link is refused.
//
// Turns: channel sides attach to a fresh channel only (positions start at
// 0). A frontend holds the lock on the link's second byte while attached
// (claim_frontend), so there is one at a time; a backend whose frontend
// has left takes that lock itself (try_lock_frontends), formats the link
// afresh and releases it, and the next frontend, which waits until it
// holds the lock on a fresh link, starts at 0 again.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/devpool/link.hpp"

namespace cxlpool::devpool {

class LinkFile {
 public:
  // Creates `path` (or reuses it: O_CREAT without O_EXCL, mode 0600), sizes it
  // and formats a fresh link at offset 0, holding the backend lock before it
  // writes anything: EBUSY when a live backend serves the link already.
  static Result<LinkFile> create(const std::string& path, const LinkGeometry& geometry);
  // Maps a formatted link: the whole file from `offset` (a multiple of 4096).
  // EPROTO for a file that holds no link there.
  static Result<LinkFile> open(const std::string& path, std::uint64_t offset = 0);
  // As open(), on a descriptor the caller keeps (it is duplicated).
  static Result<LinkFile> adopt(int fd, std::uint64_t offset = 0);

  const LinkView& view() const { return view_; }
  int fd() const { return fd_.get(); }

  // Takes the backend lock (EBUSY when another description holds it).
  Result<void> hold_backend_lock();
  // True while some other open file description holds the backend lock.
  bool backend_alive() const;

  // Frontend: waits until this description holds the frontend lock on a
  // fresh link, and keeps it until the file is closed. EBUSY: another
  // frontend kept the link for `timeout`; ENOTCONN: no backend serves it;
  // ETIMEDOUT: the backend did not make the link fresh in time.
  Result<void> claim_frontend(std::chrono::milliseconds timeout);
  // Backend: takes the frontend lock when no frontend holds it (false
  // otherwise); unlock_frontends() gives it back after the format.
  bool try_lock_frontends();
  void unlock_frontends();
  // Formats the link afresh in place with its own geometry (the backend,
  // holding the frontend lock, with no channel side attached).
  Result<void> reformat();

 private:
  static Result<LinkFile> map(UniqueFd fd, std::uint64_t offset);

  UniqueFd fd_;
  std::uint64_t offset_ = 0;
  Mapping mapping_;
  LinkView view_{};
};

// True when neither side has used the link's channels since they were
// formatted: nothing published or consumed on either channel.
bool link_is_fresh(const LinkView& link);

}  // namespace cxlpool::devpool
