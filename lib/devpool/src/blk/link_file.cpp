// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/link_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "cxlpool/devpool/line_access.hpp"

namespace cxlpool::devpool {
namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kFrontendLockByte = 1;  // after the backend's byte 0

// The last 8 bytes of a channel line (channel.hpp: the consumer line's
// slots-consumed word, a slot's sequence word), fetched from memory.
std::uint64_t line_tail(std::span<std::byte> channel, std::size_t line, Coherence coherence) {
  const std::byte* at = channel.data() + line * kLineBytes;
  if (coherence == Coherence::kNonCoherent) NonCoherentLines().invalidate(at);
  alignas(kLineBytes) std::byte copy[kLineBytes];
  CoherentLines().load(at, copy);
  std::uint64_t tail = 0;
  std::memcpy(&tail, copy + kLineBytes - sizeof tail, sizeof tail);
  return tail;
}

struct flock lock_range(short type, std::uint64_t offset) {
  struct flock l{};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = static_cast<off_t>(offset);
  l.l_len = 1;
  return l;
}

}  // namespace

Result<LinkFile> LinkFile::map(UniqueFd fd, std::uint64_t offset) {
  if (offset % kPage != 0) return fail(EINVAL, "link offset " + std::to_string(offset) + " is not page aligned");
  struct stat st{};
  if (::fstat(fd.get(), &st) < 0) return fail_errno("fstat link file");
  // A devdax device reports no size through stat; its link is sized by the header.
  std::uint64_t length = static_cast<std::uint64_t>(st.st_size);
  if (S_ISREG(st.st_mode)) {
    if (length <= offset) return fail(EPROTO, "link file holds no link at offset " + std::to_string(offset));
    length -= offset;
  } else {
    return fail(EINVAL, "link file is not a regular file");
  }
  auto mapping = Mapping::map(length, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), static_cast<off_t>(offset));
  if (!mapping) return tl::unexpected(mapping.error());
  auto view = open_link({mapping->data(), mapping->length()});
  if (!view) return tl::unexpected(view.error());
  LinkFile f;
  f.fd_ = std::move(fd);
  f.offset_ = offset;
  f.mapping_ = std::move(*mapping);
  f.view_ = *view;
  return f;
}

Result<LinkFile> LinkFile::create(const std::string& path, const LinkGeometry& geometry) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return fail_errno("open link file " + path);
  LinkFile f;
  f.fd_ = std::move(fd);
  if (auto ok = f.hold_backend_lock(); !ok) return tl::unexpected(ok.error());
  const std::size_t bytes = link_bytes(geometry);
  // Zero length first, so no stale link survives in a reused file.
  if (::ftruncate(f.fd_.get(), 0) < 0 || ::ftruncate(f.fd_.get(), static_cast<off_t>(bytes)) < 0) {
    return fail_errno("size link file " + path);
  }
  auto mapping = Mapping::map(bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd_.get(), 0);
  if (!mapping) return tl::unexpected(mapping.error());
  if (auto ok = format_link({mapping->data(), mapping->length()}, geometry); !ok) return tl::unexpected(ok.error());
  auto view = open_link({mapping->data(), mapping->length()});
  if (!view) return tl::unexpected(view.error());
  f.mapping_ = std::move(*mapping);
  f.view_ = *view;
  return f;
}

Result<LinkFile> LinkFile::open(const std::string& path, std::uint64_t offset) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) return fail_errno("open link file " + path);
  return map(std::move(fd), offset);
}

Result<LinkFile> LinkFile::adopt(int fd, std::uint64_t offset) {
  // A new open file description of our own (not a dup), so that our lock
  // queries never see the caller's own locks as ours.
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  UniqueFd own(::open(self.c_str(), O_RDWR | O_CLOEXEC));
  if (!own) return fail_errno("reopen link descriptor " + std::to_string(fd));
  return map(std::move(own), offset);
}

Result<void> LinkFile::hold_backend_lock() {
  struct flock l = lock_range(F_WRLCK, offset_);
  if (::fcntl(fd_.get(), F_OFD_SETLK, &l) < 0) {
    if (errno == EAGAIN || errno == EACCES) return fail(EBUSY, "another backend serves this link");
    return fail_errno("lock link file");
  }
  return {};
}

bool link_is_fresh(const LinkView& link) {
  // Line 1 is each channel's consumer line, line 2 its first slot.
  for (const auto& [channel, geometry] : {std::pair{link.request_channel, link.geometry.requests},
                                          std::pair{link.completion_channel, link.geometry.completions}}) {
    if (line_tail(channel, 1, geometry.coherence) != 0 || line_tail(channel, 2, geometry.coherence) != 0) return false;
  }
  return true;
}

Result<void> LinkFile::claim_frontend(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool locked_out = true;  // every try found the lock held
  for (;;) {
    if (try_lock_frontends()) {
      locked_out = false;
      if (link_is_fresh(view_)) return {};
      unlock_frontends();  // the backend needs it to format the link
    }
    if (!backend_alive()) return fail(ENOTCONN, "no backend serves this link");
    if (std::chrono::steady_clock::now() >= deadline) {
      if (locked_out) return fail(EBUSY, "another frontend uses this link");
      return fail(ETIMEDOUT, "the backend did not make the link ready for a new frontend");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

bool LinkFile::try_lock_frontends() {
  struct flock l = lock_range(F_WRLCK, offset_ + kFrontendLockByte);
  return ::fcntl(fd_.get(), F_OFD_SETLK, &l) == 0;
}

void LinkFile::unlock_frontends() {
  struct flock l = lock_range(F_UNLCK, offset_ + kFrontendLockByte);
  ::fcntl(fd_.get(), F_OFD_SETLK, &l);
}

Result<void> LinkFile::reformat() {
  return format_link({mapping_.data(), mapping_.length()}, view_.geometry);
}

bool LinkFile::backend_alive() const {
  struct flock l = lock_range(F_WRLCK, offset_);
  // A query that fails says nothing: assume alive and let the timeout decide.
  if (::fcntl(fd_.get(), F_OFD_GETLK, &l) < 0) return true;
  return l.l_type != F_UNLCK;
}

}  // namespace cxlpool::devpool
