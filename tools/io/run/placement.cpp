// SPDX-License-Identifier: Apache-2.0
#include "placement.hpp"

#include <linux/mempolicy.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "../job/placement_parsers.hpp"

namespace cxlpool::io {
namespace {

Result<std::vector<int>> node_cpus(int node, const std::string& root) {
  const std::string path = root + "/node" + std::to_string(node) + "/cpulist";
  std::ifstream in(path);
  if (!in) return fail(ENOENT, "NUMA node " + std::to_string(node) + " does not exist (no " + path + ")");
  std::string text;
  std::getline(in, text);
  if (text.empty()) return std::vector<int>{};  // a memory-only node (CXL memory has no CPUs)
  auto cpus = parse_index_list(text, kMaxCpuIndex);
  if (!cpus) return fail(EINVAL, path + ": " + cpus.error().message);
  return cpus;
}

bool node_exists(int node, const std::string& root) {
  std::ifstream in(root + "/node" + std::to_string(node) + "/cpulist");
  return static_cast<bool>(in);
}

}  // namespace

Result<std::vector<int>> job_cpus(const JobSpec& job, const std::string& node_root) {
  std::vector<int> from_nodes;
  for (int node : job.numa_cpu_nodes) {
    auto cpus = node_cpus(node, node_root);
    if (!cpus) return tl::unexpected(cpus.error());
    from_nodes.insert(from_nodes.end(), cpus->begin(), cpus->end());
  }
  std::sort(from_nodes.begin(), from_nodes.end());
  from_nodes.erase(std::unique(from_nodes.begin(), from_nodes.end()), from_nodes.end());
  if (!job.numa_cpu_nodes.empty() && from_nodes.empty())
    return fail(EINVAL, "numa_cpu_nodes: the nodes have no CPUs");
  if (job.cpus_allowed.empty()) return from_nodes;
  if (job.numa_cpu_nodes.empty()) return job.cpus_allowed;
  std::vector<int> both;
  std::set_intersection(job.cpus_allowed.begin(), job.cpus_allowed.end(), from_nodes.begin(), from_nodes.end(),
                        std::back_inserter(both));
  if (both.empty()) return fail(EINVAL, "cpus_allowed and numa_cpu_nodes have no CPU in common");
  return both;
}

Result<void> pin_thread(const std::vector<int>& cpus) {
  if (cpus.empty()) return {};
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= CPU_SETSIZE) return fail(EINVAL, "CPU " + std::to_string(cpu) + " is beyond CPU_SETSIZE");
    CPU_SET(cpu, &set);
  }
  const int rc = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
  if (rc != 0) return fail(rc, std::string("cpus_allowed: sched_setaffinity: ") + std::strerror(rc));
  return {};
}

Result<void> bind_buffers(std::span<std::byte*> buffers, std::size_t bytes, const NumaMemPolicy& policy,
                          const std::string& node_root) {
  if (policy.mode == MemPolicy::kDefault) return {};
  int mode = MPOL_DEFAULT;
  switch (policy.mode) {
    case MemPolicy::kPrefer: mode = MPOL_PREFERRED; break;
    case MemPolicy::kBind: mode = MPOL_BIND; break;
    case MemPolicy::kInterleave: mode = MPOL_INTERLEAVE; break;
    case MemPolicy::kLocal: mode = MPOL_LOCAL; break;
    case MemPolicy::kDefault: break;
  }
  constexpr std::size_t kBitsPerWord = 8 * sizeof(unsigned long);
  std::vector<unsigned long> mask;
  for (int node : policy.nodes) {
    if (!node_exists(node, node_root))
      return fail(ENOENT, "numa_mem_policy: NUMA node " + std::to_string(node) + " does not exist");
    const auto n = static_cast<std::size_t>(node);
    if (mask.size() <= n / kBitsPerWord) mask.resize(n / kBitsPerWord + 1, 0);
    mask[n / kBitsPerWord] |= 1ul << (n % kBitsPerWord);
  }
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t length = (bytes + page - 1) / page * page;
  const unsigned long max_node = mask.empty() ? 0 : mask.size() * kBitsPerWord + 1;
  for (std::byte* b : buffers) {
    if (reinterpret_cast<std::uintptr_t>(b) % page != 0)
      return fail(EINVAL, "numa_mem_policy: this engine's buffers are not page-aligned");
    if (::syscall(SYS_mbind, b, length, mode, mask.empty() ? nullptr : mask.data(), max_node, MPOL_MF_MOVE) != 0) {
      const int err = errno;
      return fail(err, std::string("numa_mem_policy: mbind: ") + std::strerror(err));
    }
  }
  return {};
}

}  // namespace cxlpool::io
