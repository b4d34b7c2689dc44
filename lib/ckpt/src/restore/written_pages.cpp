// SPDX-License-Identifier: Apache-2.0
// The written set of a mow clone, from its pagemap: a page it wrote was
// copied out of the image by the kernel's copy-on-write, so its entry no
// longer says "file page". That is the hot set source for kernels without
// soft-dirty bits, where nothing else tells which pages a process wrote.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "cxlpool/ckpt/restorer.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::ckpt {
namespace {

constexpr uint64_t kPresent = 1ull << 63, kSwapped = 1ull << 62, kFilePage = 1ull << 61;

}  // namespace

bool pagemap_entry_anonymous(uint64_t entry) { return (entry & (kPresent | kSwapped)) && !(entry & kFilePage); }

Result<std::vector<uint64_t>> written_image_pages(pid_t pid, const Manifest& m) {
  const std::string path = fmt::format("/proc/{}/pagemap", pid);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail_errno("open " + path);
  std::vector<uint64_t> out, entries;
  for (const PageRun& run : m.runs) {
    entries.resize(run.pages);
    const size_t want = entries.size() * sizeof(uint64_t);
    const ssize_t n = ::pread(fd.get(), entries.data(), want, static_cast<off_t>(run.addr / kPageSize * 8));
    if (n < 0) return fail_errno("read " + path);
    if (static_cast<size_t>(n) != want) return fail(ESRCH, fmt::format("{}: short read, the process is gone", path));
    for (uint64_t i = 0; i < run.pages; ++i)
      if (pagemap_entry_anonymous(entries[i])) out.push_back(run.addr + i * kPageSize);
  }
  return out;
}

Result<pid_t> clone_pid(pid_t keeper) {
  std::ifstream f(fmt::format("/proc/{}/task/{}/children", keeper, keeper));
  pid_t c = -1;
  if (!(f >> c)) return fail(ESRCH, fmt::format("keeper {} has no clone", keeper));
  return c;
}

}  // namespace cxlpool::ckpt
