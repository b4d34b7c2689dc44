// SPDX-License-Identifier: Apache-2.0
#include "link_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/devpool/net/descriptor.hpp"

namespace cxlpool::devpool_tool {
namespace {

Result<void> format_open_file(int fd, const std::string& path, const devpool::LinkGeometry& g) {
  const size_t bytes = devpool::link_bytes(g);
  if (::ftruncate(fd, 0) != 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    return fail_errno("size " + path);
  }
  auto map = Mapping::map(bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
  if (!map) return tl::unexpected(map.error());
  auto formatted = devpool::format_link(std::span(map->data(), bytes), g);
  if (!formatted) return fail(formatted.error().code, path + ": " + formatted.error().message);
  return {};
}

// The lock is on the open file, which a mapping keeps open: callers unlock
// explicitly (unlock()) rather than by closing.
Result<UniqueFd> open_locked(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return fail_errno("open " + path);
  if (::flock(fd.get(), LOCK_EX) != 0) return fail_errno("lock " + path);
  return fd;
}

void unlock(int fd) { ::flock(fd, LOCK_UN); }

}  // namespace

devpool::LinkGeometry default_net_link_geometry(devpool::Coherence coherence) {
  devpool::LinkGeometry g;
  g.requests = {1024, static_cast<uint32_t>(devpool::net::kDescriptorBytes), coherence};
  g.completions = g.requests;
  g.frontend_buffer_bytes = 4u << 20;
  g.backend_buffer_bytes = 4u << 20;
  return g;
}

Result<void> format_link_file(const std::string& path, const devpool::LinkGeometry& g) {
  auto fd = open_locked(path);
  if (!fd) return tl::unexpected(fd.error());
  auto formatted = format_open_file(fd->get(), path, g);
  unlock(fd->get());
  return formatted;
}

Result<MappedLink> open_link_file(const std::string& path, const devpool::LinkGeometry& g) {
  auto fd = open_locked(path);
  if (!fd) return tl::unexpected(fd.error());
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return fail_errno("stat " + path);
  if (st.st_size == 0) {
    auto formatted = format_open_file(fd->get(), path, g);
    if (!formatted) return tl::unexpected(formatted.error());
    if (::fstat(fd->get(), &st) != 0) return fail_errno("stat " + path);
  }
  MappedLink link;
  auto map = Mapping::map(static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd->get());
  if (!map) return tl::unexpected(map.error());
  link.mapping = std::move(*map);
  unlock(fd->get());
  auto view = devpool::open_link(std::span(link.mapping.data(), link.mapping.length()));
  if (!view) return fail(view.error().code, path + ": " + view.error().message);
  link.view = *view;
  return link;
}

}  // namespace cxlpool::devpool_tool
