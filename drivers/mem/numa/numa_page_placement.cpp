// SPDX-License-Identifier: Apache-2.0
#include "numa_page_placement.hpp"

#include <numa.h>
#include <numaif.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdint>
#include <string>

namespace cxlpool::drivers {
namespace {

constexpr size_t kBitsPerWord = sizeof(unsigned long) * CHAR_BIT;

std::string hex(const void* addr) {
  char buf[32];
  snprintf(buf, sizeof buf, "%p", addr);
  return buf;
}

std::string range_text(void* addr, size_t length) {
  return "[" + hex(addr) + ", +" + std::to_string(length) + ")";
}

// A nodemask with one bit set, sized for the kernel's get_nodes(): it reads
// maxnode - 1 bits, so maxnode is one more than the bits we hand over.
class SingleNodeMask {
 public:
  explicit SingleNodeMask(int node) : words_(static_cast<size_t>(node) / kBitsPerWord + 1, 0) {
    words_[static_cast<size_t>(node) / kBitsPerWord] |= 1UL << (static_cast<size_t>(node) % kBitsPerWord);
  }
  const unsigned long* words() const { return words_.data(); }
  unsigned long max_node() const { return words_.size() * kBitsPerWord + 1; }

 private:
  std::vector<unsigned long> words_;
};

// Rejects nodes that the kernel would refuse with a less helpful errno: the
// kernel's limit gives EINVAL, a node without usable memory ENODEV.
Result<void> check_node(int node) {
  const int max_possible = numa_max_possible_node();
  if (node < 0 || node > max_possible) {
    return fail(EINVAL, "NUMA node " + std::to_string(node) + " out of range 0-" +
                            std::to_string(max_possible));
  }
  std::vector<unsigned long> allowed(static_cast<size_t>(max_possible) / kBitsPerWord + 1, 0);
  if (get_mempolicy(nullptr, allowed.data(), allowed.size() * kBitsPerWord, nullptr,
                    MPOL_F_MEMS_ALLOWED) != 0) {
    return fail_errno("get_mempolicy(MPOL_F_MEMS_ALLOWED)");
  }
  const size_t n = static_cast<size_t>(node);
  if ((allowed[n / kBitsPerWord] & (1UL << (n % kBitsPerWord))) == 0) {
    return fail(ENODEV, "NUMA node " + std::to_string(node) +
                            " has no memory this process may use (not in Mems_allowed)");
  }
  return {};
}

Result<size_t> page_count(void* addr, size_t length, size_t page_size) {
  const auto base = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (page_size == 0 || page_size % base != 0) {
    return fail(EINVAL, "page size " + std::to_string(page_size) +
                            " is not a multiple of the base page size " + std::to_string(base));
  }
  if (reinterpret_cast<uintptr_t>(addr) % page_size != 0) {
    return fail(EINVAL, "address " + hex(addr) + " is not aligned to the page size " +
                            std::to_string(page_size));
  }
  if (length == 0) return fail(EINVAL, "empty range at " + hex(addr));
  return (length + page_size - 1) / page_size;
}

void count_failure(hal::MoveStats& stats, int error) {
  ++stats.pages_failed;
  if (stats.first_error == 0) stats.first_error = error;
}

}  // namespace

NumaPagePlacement::NumaPagePlacement(size_t batch_pages)
    : batch_pages_(std::max<size_t>(batch_pages, 1)) {}

Result<void> NumaPagePlacement::bind(void* addr, size_t length, int node) {
  const auto base = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (reinterpret_cast<uintptr_t>(addr) % base != 0 || length == 0) {
    return fail(EINVAL, "mbind " + range_text(addr, length) + ": unaligned or empty range");
  }
  if (node < 0) return fail(EINVAL, "NUMA node " + std::to_string(node) + " is negative");
  const SingleNodeMask mask(node);
  // Allocation calls this for every region: the node is checked only when
  // the kernel refuses, to turn its EINVAL into a precise message.
  if (mbind(addr, length, MPOL_BIND, mask.words(), mask.max_node(), 0) != 0) {
    const int code = errno;
    if (auto ok = check_node(node); !ok) return ok;
    return fail(code, errno_message("mbind " + range_text(addr, length) + " to node " + std::to_string(node), code));
  }
  return {};
}

Result<std::vector<int>> NumaPagePlacement::query(void* addr, size_t length, size_t page_size) {
  auto count = page_count(addr, length, page_size);
  if (!count) return tl::unexpected(count.error());
  std::vector<int> status(*count, 0);
  std::vector<void*> pages;
  pages.reserve(std::min(*count, batch_pages_));
  auto* base = static_cast<std::byte*>(addr);
  for (size_t first = 0; first < *count; first += batch_pages_) {
    const size_t n = std::min(batch_pages_, *count - first);
    pages.clear();
    for (size_t i = 0; i < n; ++i) pages.push_back(base + (first + i) * page_size);
    // nodes == NULL: move_pages only reports where each page is.
    if (::move_pages(0, n, pages.data(), nullptr, status.data() + first, 0) != 0) {
      return fail_errno("move_pages status query of " + range_text(addr, length));
    }
  }
  return status;
}

Result<hal::MoveStats> NumaPagePlacement::move(void* addr, size_t length, size_t page_size,
                                               int node, bool all) {
  if (auto ok = check_node(node); !ok) return tl::unexpected(ok.error());
  auto where = query(addr, length, page_size);
  if (!where) return tl::unexpected(where.error());

  hal::MoveStats stats;
  stats.pages_total = where->size();
  std::vector<size_t> to_move;
  for (size_t i = 0; i < where->size(); ++i) {
    const int s = (*where)[i];
    if (s == node) {
      ++stats.pages_already;
    } else if (s >= 0) {
      to_move.push_back(i);
    } else if (s == -ENOENT || s == -EFAULT) {
      // No page of its own: never touched, the shared zero page, or (before
      // Linux 6.x) no page table yet, which reads -EFAULT instead of -ENOENT.
      ++stats.pages_absent;
    } else {
      count_failure(stats, -s);
    }
  }

  const int flags = all ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE;
  auto* base = static_cast<std::byte*>(addr);
  std::vector<void*> pages;
  std::vector<int> nodes;
  std::vector<int> status;
  // Pages under writeback or briefly pinned come back -EBUSY/-EAGAIN (or
  // still on their old node); a later pass usually moves them.
  constexpr int kPasses = 3;
  for (int pass = 0; pass < kPasses && !to_move.empty(); ++pass) {
    const bool last = pass + 1 == kPasses;
    std::vector<size_t> retry;
    for (size_t first = 0; first < to_move.size(); first += batch_pages_) {
      const size_t n = std::min(batch_pages_, to_move.size() - first);
      pages.assign(n, nullptr);
      nodes.assign(n, node);
      status.assign(n, 0);
      for (size_t i = 0; i < n; ++i) pages[i] = base + to_move[first + i] * page_size;
      // A positive result counts pages the kernel could not migrate; their
      // status entries say why (or still name the old node).
      if (::move_pages(0, n, pages.data(), nodes.data(), status.data(), flags) < 0) {
        return fail_errno("move_pages " + std::to_string(n) + " page(s) of " +
                          range_text(addr, length) + " to node " + std::to_string(node) +
                          (all ? " (MPOL_MF_MOVE_ALL)" : ""));
      }
      for (size_t i = 0; i < n; ++i) {
        const bool transient = status[i] == -EBUSY || status[i] == -EAGAIN ||
                               (status[i] >= 0 && status[i] != node);
        if (status[i] == node) {
          ++stats.pages_moved;
        } else if (status[i] == -ENOENT || status[i] == -EFAULT) {
          ++stats.pages_absent;  // unmapped or reclaimed since the query
        } else if (transient && !last) {
          retry.push_back(to_move[first + i]);
        } else {
          count_failure(stats, status[i] < 0 ? -status[i] : EBUSY);
        }
      }
    }
    to_move = std::move(retry);
  }
  return stats;
}

Result<std::vector<int>> NumaPagePlacement::query_pages(int pid, std::span<void* const> pages) {
  std::vector<int> status(pages.size(), 0);
  std::vector<void*> batch;
  for (size_t first = 0; first < pages.size(); first += batch_pages_) {
    const size_t n = std::min(batch_pages_, pages.size() - first);
    batch.assign(pages.begin() + static_cast<std::ptrdiff_t>(first),
                 pages.begin() + static_cast<std::ptrdiff_t>(first + n));
    if (::move_pages(pid, n, batch.data(), nullptr, status.data() + first, 0) != 0) {
      return fail_errno("move_pages status query of " + std::to_string(n) + " page(s) of pid " +
                        std::to_string(pid));
    }
  }
  return status;
}

Result<std::vector<int>> NumaPagePlacement::move_pages(int pid, std::span<void* const> pages, int node,
                                                       bool all) {
  if (auto ok = check_node(node); !ok) return tl::unexpected(ok.error());
  const auto base = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (void* page : pages) {
    if (reinterpret_cast<uintptr_t>(page) % base != 0) {
      return fail(EINVAL, "page address " + hex(page) + " is not aligned to " + std::to_string(base));
    }
  }
  std::vector<int> result(pages.size(), -ENOENT);
  const int flags = all ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE;
  std::vector<size_t> todo(pages.size());
  for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  std::vector<void*> batch;
  std::vector<int> nodes;
  std::vector<int> status;
  constexpr int kPasses = 3;
  for (int pass = 0; pass < kPasses && !todo.empty(); ++pass) {
    std::vector<size_t> retry;
    for (size_t first = 0; first < todo.size(); first += batch_pages_) {
      const size_t n = std::min(batch_pages_, todo.size() - first);
      batch.resize(n);
      for (size_t i = 0; i < n; ++i) batch[i] = pages[todo[first + i]];
      nodes.assign(n, node);
      status.assign(n, 0);
      if (::move_pages(pid, n, batch.data(), nodes.data(), status.data(), flags) < 0) {
        return fail_errno("move_pages " + std::to_string(n) + " page(s) of pid " + std::to_string(pid) +
                          " to node " + std::to_string(node) + (all ? " (MPOL_MF_MOVE_ALL)" : ""));
      }
      for (size_t i = 0; i < n; ++i) {
        const size_t at = todo[first + i];
        result[at] = status[i];
        const bool transient = status[i] == -EBUSY || status[i] == -EAGAIN || (status[i] >= 0 && status[i] != node);
        if (transient && pass + 1 < kPasses) retry.push_back(at);
      }
    }
    todo = std::move(retry);
  }
  return result;
}

std::unique_ptr<hal::PagePlacement> make_numa_page_placement() {
  return std::make_unique<NumaPagePlacement>();
}

}  // namespace cxlpool::drivers
