// SPDX-License-Identifier: Apache-2.0
#include "file_layout.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "rng.hpp"

namespace cxlpool::io {
namespace {

constexpr std::size_t kFillChunk = 1 << 20;

}  // namespace

FileFacts file_facts(const std::string& path) {
  struct stat st {};
  FileFacts f;
  if (::stat(path.c_str(), &st) != 0) return f;
  f.exists = true;
  f.is_block_device = S_ISBLK(st.st_mode);
  f.is_char_device = S_ISCHR(st.st_mode);
  f.size = static_cast<std::uint64_t>(st.st_size);
  return f;
}

Result<void> lay_out_file(const std::string& path, std::uint64_t bytes, bool fill) {
  const FileFacts facts = file_facts(path);
  if (facts.is_block_device) return {};
  if (facts.exists && facts.size >= bytes) return {};
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd) return fail_errno("lay out " + path);
  if (!fill) {
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return fail_errno("extend " + path);
    return {};
  }
  std::vector<std::uint64_t> chunk(kFillChunk / sizeof(std::uint64_t));
  std::uint64_t state = bytes ^ 0x2545f4914f6cdd1dull;
  for (auto& word : chunk) word = splitmix64(state);
  std::uint64_t at = facts.size;
  while (at < bytes) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kFillChunk, bytes - at));
    const ssize_t rc = ::pwrite(fd.get(), chunk.data(), n, static_cast<off_t>(at));
    if (rc < 0) {
      if (errno == EINTR) continue;
      return fail_errno("lay out " + path);
    }
    at += static_cast<std::uint64_t>(rc);
  }
  if (::fdatasync(fd.get()) != 0) return fail_errno("fdatasync " + path);
  return {};
}

}  // namespace cxlpool::io
