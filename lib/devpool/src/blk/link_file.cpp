// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/link_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace cxlpool::devpool {
namespace {

constexpr std::uint64_t kPage = 4096;

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

bool LinkFile::backend_alive() const {
  struct flock l = lock_range(F_WRLCK, offset_);
  // A query that fails says nothing: assume alive and let the timeout decide.
  if (::fcntl(fd_.get(), F_OFD_GETLK, &l) < 0) return true;
  return l.l_type != F_UNLCK;
}

}  // namespace cxlpool::devpool
