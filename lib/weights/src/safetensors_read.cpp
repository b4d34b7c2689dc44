// SPDX-License-Identifier: Apache-2.0
// Reading a safetensors header from an open file: the 8-byte length, then
// the JSON, each checked against the limits before anything is allocated.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/weights/safetensors.hpp"

namespace cxlpool::weights {

Result<HeaderText> read_header_text(int fd, const ParseLimits& limits) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail_errno("fstat");
  if (!S_ISREG(st.st_mode)) return fail(EINVAL, "not a regular file");
  HeaderText out;
  out.file_size = static_cast<uint64_t>(st.st_size);
  std::array<std::byte, kSafetensorsPrefixBytes> prefix{};
  ssize_t got = -1;
  do {
    got = ::pread(fd, prefix.data(), prefix.size(), 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return fail_errno("read header length");
  auto n = parse_header_size(std::span<const std::byte>(prefix.data(), static_cast<size_t>(got)),
                             out.file_size, limits);
  if (!n) return tl::unexpected(n.error());
  out.json.resize(*n);
  size_t done = 0;
  while (done < out.json.size()) {
    ssize_t r = ::pread(fd, out.json.data() + done, out.json.size() - done,
                        static_cast<off_t>(kSafetensorsPrefixBytes + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return fail_errno("read header");
    }
    if (r == 0) return fail(EBADMSG, "file shrank while reading the header");
    done += static_cast<size_t>(r);
  }
  return out;
}

Result<SafetensorsHeader> read_header(int fd, const ParseLimits& limits) {
  auto text = read_header_text(fd, limits);
  if (!text) return tl::unexpected(text.error());
  return parse_header(text->json, text->file_size, limits);
}

Result<SafetensorsHeader> read_header_file(const std::string& path, const ParseLimits& limits) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail_errno(path);
  UniqueFd guard(fd);
  auto h = read_header(fd, limits);
  if (!h) return fail(h.error().code, path + ": " + h.error().message);
  return h;
}

}  // namespace cxlpool::weights
