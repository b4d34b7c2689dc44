// SPDX-License-Identifier: Apache-2.0
#include "page_placement.hpp"

#include <linux/mempolicy.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fstream>

namespace cxlpool::vmtest {
namespace {

// move_pages() walks its arrays in the kernel; batching bounds the arrays.
constexpr size_t kBatchPages = 16384;

std::vector<void*> page_addresses(const void* addr, size_t first, size_t count,
                                  size_t page_size) {
  std::vector<void*> pages(count);
  auto* base = static_cast<std::byte*>(const_cast<void*>(addr));
  for (size_t i = 0; i < count; ++i) pages[i] = base + (first + i) * page_size;
  return pages;
}

}  // namespace

Result<std::vector<int>> query_page_nodes(const void* addr, size_t length, size_t page_size) {
  const size_t total = length / page_size;
  std::vector<int> nodes(total, -ENOENT);
  for (size_t first = 0; first < total; first += kBatchPages) {
    const size_t count = std::min(kBatchPages, total - first);
    auto pages = page_addresses(addr, first, count, page_size);
    if (syscall(SYS_move_pages, 0, count, pages.data(), nullptr, nodes.data() + first, 0) < 0) {
      return fail_errno("move_pages (query)");
    }
  }
  return nodes;
}

Result<size_t> move_range_to_node(void* addr, size_t length, size_t page_size, int node,
                                  bool all_users) {
  constexpr int kAttempts = 5;
  const size_t total = length / page_size;
  const int flags = all_users ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE;
  size_t retried = 0;
  for (size_t first = 0; first < total; first += kBatchPages) {
    auto pages = page_addresses(addr, first, std::min(kBatchPages, total - first), page_size);
    for (int attempt = 1;; ++attempt) {
      std::vector<int> targets(pages.size(), node);
      std::vector<int> status(pages.size(), 0);
      if (syscall(SYS_move_pages, 0, pages.size(), pages.data(), targets.data(), status.data(),
                  flags) < 0) {
        return fail_errno("move_pages to node " + std::to_string(node));
      }
      // A page that did not move has a negative status or sits elsewhere.
      std::vector<void*> again;
      int last_error = 0;
      for (size_t i = 0; i < pages.size(); ++i) {
        if (status[i] == node) continue;
        if (status[i] >= 0 || status[i] == -EBUSY || status[i] == -EAGAIN) {
          again.push_back(pages[i]);
          last_error = status[i] < 0 ? -status[i] : EAGAIN;
          continue;
        }
        return fail(-status[i], errno_message("move_pages to node " + std::to_string(node) +
                                                  ": page at offset " +
                                                  std::to_string(static_cast<std::byte*>(pages[i]) -
                                                                 static_cast<std::byte*>(addr)),
                                              -status[i]));
      }
      if (again.empty()) break;
      if (attempt == kAttempts) {
        return fail(last_error, errno_message(std::to_string(again.size()) +
                                                  " pages did not move to node " +
                                                  std::to_string(node) + " after " +
                                                  std::to_string(kAttempts) + " attempts",
                                              last_error));
      }
      retried += again.size();
      pages = std::move(again);
    }
  }
  return retried;
}

Result<void> bind_range_to_node(void* addr, size_t length, int node) {
  if (node < 0 || node >= 64) return fail(EINVAL, "node out of range");
  unsigned long mask = 1ul << node;
  // maxnode counts one past the last bit the kernel reads.
  if (syscall(SYS_mbind, addr, length, MPOL_BIND, &mask, sizeof(mask) * 8 + 1, 0) < 0) {
    return fail_errno("mbind to node " + std::to_string(node));
  }
  return {};
}

Result<void> expect_all_on_node(const std::vector<int>& nodes, int node) {
  size_t wrong = 0;
  std::string examples;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] == node) continue;
    if (++wrong <= 4) {
      examples += " page " + std::to_string(i) + " -> " +
                  (nodes[i] < 0 ? errno_message("status", -nodes[i]) : "node " + std::to_string(nodes[i]));
    }
  }
  if (wrong == 0) return {};
  return fail(EFAULT, std::to_string(wrong) + " of " + std::to_string(nodes.size()) +
                          " pages are not on node " + std::to_string(node) + ":" + examples);
}

bool numa_node_exists(int node) {
  struct stat st {};
  const std::string path = "/sys/devices/system/node/node" + std::to_string(node);
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<std::string> numa_node_cpulist(int node) {
  const std::string path = "/sys/devices/system/node/node" + std::to_string(node) + "/cpulist";
  std::ifstream in(path);
  if (!in) return fail_errno("open " + path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace cxlpool::vmtest
