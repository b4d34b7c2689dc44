// SPDX-License-Identifier: Apache-2.0
// Which private pages the process has (PAGEMAP_SCAN, or pagemap entries on
// kernels before 6.7), copied into the image with
// process_vm_readv, many runs per call. Pages of a private file mapping
// that still are the file's page cache are not stored: a restore maps the
// file. /proc/PID/mem, which may read pages the process made inaccessible
// (PROT_NONE), takes over where process_vm_readv stops short. Shared
// anonymous memory is asked of its shmem object (SEEK_DATA), which knows the
// pages no page table of the process holds: swapped ones, ones written
// through another mapping of it.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "capture_steps.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::ckpt::detail {
namespace {

constexpr uint64_t kPresent = 1ull << 63, kSwapped = 1ull << 62, kFilePage = 1ull << 61;
constexpr uint64_t kPagemapBatch = 16384;         // entries per pagemap read
constexpr std::size_t kCopyBytes = 8u << 20;      // page data per copy batch
constexpr std::size_t kMaxIov = IOV_MAX;

// PAGEMAP_SCAN (linux/fs.h, 6.7): the kernel walks the range and returns
// only the stretches of pages in the asked-for categories, so a terabyte of
// untouched reservation costs nothing. Declared here for older headers.
struct PmScanArg {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
  uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
struct PageRegion {
  uint64_t start, end, categories;
};
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PmScanArg);
constexpr uint64_t kIsFile = 1ull << 2, kIsPresent = 1ull << 3, kIsSwapped = 1ull << 4;

// Extends the last run when it ends at `start` and belongs to the same VMA
// (index >= first): a run never spans two VMAs.
void add_pages(std::vector<PageRun>& runs, std::size_t first, uint64_t start, uint64_t end) {
  if (runs.size() > first && runs.back().addr + runs.back().pages * kPageSize == start) {
    runs.back().pages += (end - start) / kPageSize;
  } else {
    runs.push_back({start, (end - start) / kPageSize, 0});
  }
}

// The stored pages of v through PAGEMAP_SCAN; false when the kernel lacks it.
Result<bool> scan_vma_fast(int pagemap, const Vma& v, std::vector<PageRun>& runs) {
  std::vector<PageRegion> regions(1024);
  const std::size_t before = runs.size();
  for (uint64_t at = v.start; at < v.end;) {
    PmScanArg arg{};
    arg.size = sizeof arg;
    arg.start = at;
    arg.end = v.end;
    arg.vec = reinterpret_cast<uint64_t>(regions.data());
    arg.vec_len = regions.size();
    arg.category_anyof_mask = kIsPresent | kIsSwapped;
    if (v.kind == VmaKind::kFilePrivate) {
      // Not the file's page cache: the process's own copy.
      arg.category_inverted = kIsFile;
      arg.category_mask = kIsFile;
    }
    arg.return_mask = kIsPresent | kIsSwapped | kIsFile;
    const int n = ::ioctl(pagemap, kPagemapScan, &arg);
    if (n < 0) {
      if ((errno == ENOTTY || errno == EINVAL) && runs.size() == before) return false;
      return fail_errno("checkpoint: PAGEMAP_SCAN");
    }
    // A scan that stopped with a full vector may report its last stretch
    // again on the next call: only what lies past the pages taken counts.
    for (int i = 0; i < n; ++i) {
      const uint64_t taken = runs.size() > before ? runs.back().addr + runs.back().pages * kPageSize : v.start;
      const uint64_t start = std::max(regions[i].start, taken);
      if (start < regions[i].end) add_pages(runs, before, start, regions[i].end);
    }
    if (arg.walk_end <= at) return fail(EIO, "checkpoint: PAGEMAP_SCAN made no progress");
    at = arg.walk_end;
  }
  return true;
}

// Appends the runs of stored pages in v to `runs` (image offsets not yet set).
Result<void> scan_vma(int pagemap, const Vma& v, std::vector<PageRun>& runs) {
  auto fast = scan_vma_fast(pagemap, v, runs);
  if (!fast) return tl::unexpected(fast.error());
  if (*fast) return {};
  std::vector<uint64_t> entries;
  bool open_run = false;
  for (uint64_t page = v.start; page < v.end;) {
    const uint64_t n = std::min<uint64_t>((v.end - page) / kPageSize, kPagemapBatch);
    entries.resize(n);
    const off_t at = static_cast<off_t>(page / kPageSize * 8);
    const ssize_t got = ::pread(pagemap, entries.data(), n * 8, at);
    if (got != static_cast<ssize_t>(n * 8)) return fail_errno("checkpoint: read pagemap");
    for (uint64_t i = 0; i < n; ++i, page += kPageSize) {
      const uint64_t e = entries[i];
      bool keep = (e & (kPresent | kSwapped)) != 0;
      if (v.kind == VmaKind::kFilePrivate && (e & kFilePage)) keep = false;
      if (keep && open_run) {
        ++runs.back().pages;
      } else if (keep) {
        runs.push_back({page, 1, 0});
      }
      open_run = keep;
    }
  }
  return {};
}

// The stored pages of a kSharedAnon VMA: the stretches of its shmem object
// that hold data (in memory or swapped), through the mapping's map_files
// link; false when that cannot be opened (the pagemap then decides).
Result<bool> scan_shared(pid_t pid, const Vma& v, std::vector<PageRun>& runs) {
  char name[48];
  std::snprintf(name, sizeof name, "map_files/%llx-%llx", static_cast<unsigned long long>(v.start),
                static_cast<unsigned long long>(v.end));
  UniqueFd object(::open(proc_path(pid, name).c_str(), O_RDONLY | O_CLOEXEC));
  if (!object) return false;
  const std::size_t before = runs.size();
  const uint64_t last = v.file_offset + (v.end - v.start);
  for (uint64_t at = v.file_offset; at < last;) {
    const off_t data = ::lseek(object.get(), static_cast<off_t>(at), SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // no data past `at`
    if (data < 0) return fail_errno("checkpoint: SEEK_DATA in shared anonymous memory");
    if (static_cast<uint64_t>(data) >= last) break;
    off_t hole = ::lseek(object.get(), data, SEEK_HOLE);
    if (hole < 0) return fail_errno("checkpoint: SEEK_HOLE in shared anonymous memory");
    const uint64_t from = static_cast<uint64_t>(data) / kPageSize * kPageSize;
    const uint64_t to = std::min<uint64_t>((static_cast<uint64_t>(hole) + kPageSize - 1) / kPageSize * kPageSize, last);
    if (to <= from) return fail(EIO, "checkpoint: SEEK_HOLE went backwards");
    add_pages(runs, before, v.start + (from - v.file_offset), v.start + (to - v.file_offset));
    at = to;
  }
  return true;
}

class Copier {
 public:
  Copier(pid_t pid, int mem, ImageWriter& image) : pid_(pid), mem_(mem), image_(image), buffer_(kCopyBytes) {}

  // Queues `bytes` from addr; flushes when the buffer or iovec list is full.
  Result<void> add(uint64_t addr, uint64_t bytes) {
    while (bytes > 0) {
      const uint64_t take = std::min<uint64_t>(bytes, kCopyBytes - used_);
      remote_.push_back({reinterpret_cast<void*>(addr), take});
      used_ += take;
      addr += take;
      bytes -= take;
      if (used_ == kCopyBytes || remote_.size() == kMaxIov) {
        if (auto f = flush(); !f) return f;
      }
    }
    return {};
  }

  Result<void> flush() {
    if (used_ == 0) return {};
    iovec local{buffer_.data(), used_};
    ssize_t got = ::process_vm_readv(pid_, &local, 1, remote_.data(), remote_.size(), 0);
    if (got < 0) got = 0;
    // Where process_vm_readv stopped, /proc/PID/mem goes on.
    std::size_t done = 0;
    for (const iovec& r : remote_) {
      const std::size_t len = r.iov_len;
      if (done + len > static_cast<std::size_t>(got)) {
        const std::size_t skip = static_cast<std::size_t>(got) > done ? static_cast<std::size_t>(got) - done : 0;
        const uint64_t from = reinterpret_cast<uint64_t>(r.iov_base) + skip;
        const ssize_t n = ::pread(mem_, buffer_.data() + done + skip, len - skip, static_cast<off_t>(from));
        if (n != static_cast<ssize_t>(len - skip)) {
          char addr[24];
          std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(from));
          return fail(n < 0 ? errno : EIO, "checkpoint: read memory of " + std::to_string(pid_) + " at " + addr);
        }
      }
      done += len;
    }
    auto at = image_.append(std::span(buffer_).first(used_));
    if (!at) return tl::unexpected(at.error());
    remote_.clear();
    used_ = 0;
    return {};
  }

 private:
  pid_t pid_;
  int mem_;
  ImageWriter& image_;
  std::vector<std::byte> buffer_;
  std::vector<iovec> remote_;
  std::size_t used_ = 0;
};

}  // namespace

Result<void> capture_pages(pid_t pid, Manifest& m, ImageWriter& image) {
  UniqueFd pagemap(::open(proc_path(pid, "pagemap").c_str(), O_RDONLY | O_CLOEXEC));
  if (!pagemap) return fail_errno("checkpoint: open /proc/" + std::to_string(pid) + "/pagemap");
  UniqueFd mem(::open(proc_path(pid, "mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (!mem) return fail_errno("checkpoint: open /proc/" + std::to_string(pid) + "/mem");
  for (const Vma& v : m.vmas) {
    if (v.kind == VmaKind::kSharedAnon) {
      auto found = scan_shared(pid, v, m.runs);
      if (!found) return tl::unexpected(found.error());
      if (*found) continue;
    } else if (v.kind != VmaKind::kAnon && v.kind != VmaKind::kFilePrivate) {
      continue;
    }
    if (auto s = scan_vma(pagemap.get(), v, m.runs); !s) return s;
  }
  // Runs land in the image back to back, in address order.
  uint64_t offset = ImageWriter::kDataOffset + image.data_bytes();
  Copier copier(pid, mem.get(), image);
  for (PageRun& run : m.runs) {
    run.image_offset = offset;
    offset += run.pages * kPageSize;
    if (auto a = copier.add(run.addr, run.pages * kPageSize); !a) return a;
  }
  return copier.flush();
}

}  // namespace cxlpool::ckpt::detail
