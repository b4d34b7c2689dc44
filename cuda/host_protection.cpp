// SPDX-License-Identifier: Apache-2.0
#include "host_protection.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <string>

#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::cuda {
namespace {

// "start-end perms ..." of one maps line; false for a line that is not one.
bool parse_line(std::string_view line, uint64_t* start, uint64_t* end, std::string_view* perms) {
  const size_t dash = line.find('-');
  const size_t space = line.find(' ');
  if (dash == std::string_view::npos || space == std::string_view::npos || dash > space) return false;
  const char* s = line.data();
  if (std::from_chars(s, s + dash, *start, 16).ec != std::errc{}) return false;
  if (std::from_chars(s + dash + 1, s + space, *end, 16).ec != std::errc{}) return false;
  const size_t perms_end = line.find(' ', space + 1);
  *perms = line.substr(space + 1, perms_end == std::string_view::npos ? std::string_view::npos
                                                                      : perms_end - space - 1);
  return perms->size() >= 2;
}

}  // namespace

Result<HostProtection> host_range_protection_in(std::string_view maps, const void* host,
                                                size_t bytes) {
  if (host == nullptr || bytes == 0) return fail(EINVAL, "host_range_protection: empty range");
  const uint64_t first = reinterpret_cast<uintptr_t>(host);
  const uint64_t last = first + bytes;
  uint64_t covered = first;  // every byte below this is mapped and readable
  bool writable = true;
  // Lines are sorted by address; walk those overlapping the range and check
  // that they leave no hole.
  while (!maps.empty() && covered < last) {
    const size_t nl = maps.find('\n');
    const std::string_view line = maps.substr(0, nl);
    maps = nl == std::string_view::npos ? std::string_view{} : maps.substr(nl + 1);
    uint64_t start = 0, end = 0;
    std::string_view perms;
    if (!parse_line(line, &start, &end, &perms) || end <= covered) continue;
    if (start > covered || perms[0] != 'r') break;
    if (perms[1] != 'w') writable = false;
    covered = end;
  }
  if (covered < last) {
    return fail(EFAULT, "host_range_protection: part of the range is not mapped readable");
  }
  return writable ? HostProtection::kReadWrite : HostProtection::kReadOnly;
}

Result<HostProtection> host_range_protection(const void* host, size_t bytes) {
  UniqueFd fd(::open("/proc/self/maps", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return fail(errno, "host_range_protection: open /proc/self/maps");
  std::string text;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errno, "host_range_protection: read /proc/self/maps");
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return host_range_protection_in(text, host, bytes);
}

}  // namespace cxlpool::cuda
