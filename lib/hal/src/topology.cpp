// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/topology.hpp"

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>

#include "cxlpool/hal/meminfo.hpp"

namespace cxlpool::hal {
namespace {

constexpr const char* kNodeDir = "/sys/devices/system/node";
constexpr const char* kTierDir = "/sys/devices/virtual/memory_tiering";
constexpr const char* kProcMeminfo = "/proc/meminfo";
constexpr int kLocalDistance = 10;  // the kernel's distance of a node to itself

std::string node_path(int id, const char* file) {
  return std::string(kNodeDir) + "/node" + std::to_string(id) + "/" + file;
}

// The kernel writes id lists as "0-3,8"; the error names the file, which
// parse_id_list cannot know.
Result<std::vector<int>> read_id_list(const SysfsRoot& root, const std::string& relative) {
  auto text = root.read_string(relative);
  if (!text) return tl::unexpected(text.error());
  auto ids = parse_id_list(*text);
  if (!ids) return fail(EINVAL, root.resolve(relative).string() + ": " + ids.error().message);
  return ids;
}

// N of "<prefix><N>", or -1 when the rest is not a plain decimal number.
int numbered_suffix(const std::string& name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  int id = -1;
  const char* b = name.data() + prefix.size();
  const char* e = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(b, e, id);
  if (ec != std::errc() || ptr != e || id < 0) return -1;
  return id;
}

std::vector<int> node_dirs(const SysfsRoot& root) {
  std::vector<int> ids;
  for (const auto& name : root.list(kNodeDir, "node")) {
    const int id = numbered_suffix(name, "node");
    if (id >= 0) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// has_memory/online when present (modern kernels), else every node<N> dir.
Result<std::vector<int>> node_set(const SysfsRoot& root, const char* file) {
  const std::string path = std::string(kNodeDir) + "/" + file;
  if (!root.exists(path)) return node_dirs(root);
  auto ids = read_id_list(root, path);
  if (!ids) return ids;
  std::sort(ids->begin(), ids->end());
  ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
  return ids;
}

Result<std::vector<int>> read_distances(const SysfsRoot& root, const std::string& relative) {
  auto text = root.read_string(relative);
  if (!text) return tl::unexpected(text.error());
  std::vector<int> values;
  const char* p = text->data();
  const char* end = p + text->size();
  while (p < end) {
    if (*p == ' ' || *p == '\t' || *p == '\n') {
      ++p;
      continue;
    }
    int value = 0;
    auto [next, ec] = std::from_chars(p, end, value);
    const bool separated = next == end || *next == ' ' || *next == '\t' || *next == '\n';
    if (ec != std::errc() || !separated || value < 0) {
      return fail(EINVAL, root.resolve(relative).string() + ": not a list of distances: '" +
                              *text + "'");
    }
    values.push_back(value);
    p = next;
  }
  if (values.empty()) return fail(EINVAL, root.resolve(relative).string() + ": empty");
  return values;
}

Result<void> read_node_memory(const SysfsRoot& root, NumaNode& node, bool total_too) {
  const std::string path = node_path(node.id, "meminfo");
  auto info = read_meminfo(root, path);
  if (!info) return tl::unexpected(info.error());
  const std::string file = root.resolve(path).string();
  if (total_too) {
    auto total = meminfo_field(*info, "MemTotal", file);
    if (!total) return tl::unexpected(total.error());
    node.total_bytes = *total;
  }
  auto free = meminfo_available(*info, file);
  if (!free) return tl::unexpected(free.error());
  node.free_bytes = *free;
  return {};
}

Result<std::vector<int>> host_cpus(const SysfsRoot& root) {
  const std::string online = "/sys/devices/system/cpu/online";
  if (root.exists(online)) return read_id_list(root, online);
  // Without sysfs, count the processors /proc/cpuinfo lists.
  auto cpuinfo = root.read_string("/proc/cpuinfo");
  if (!cpuinfo) {
    return fail(ENOENT, "cannot find the CPUs: neither " + root.resolve(online).string() +
                            " nor " + root.resolve("/proc/cpuinfo").string() + " is readable");
  }
  std::vector<int> cpus;
  size_t pos = 0;
  while (pos < cpuinfo->size()) {
    size_t nl = cpuinfo->find('\n', pos);
    if (nl == std::string::npos) nl = cpuinfo->size();
    if (cpuinfo->compare(pos, 9, "processor") == 0) cpus.push_back(static_cast<int>(cpus.size()));
    pos = nl + 1;
  }
  return cpus;
}

// Kernels without CONFIG_NUMA have no node directory: the whole machine is
// one node, sized from /proc/meminfo.
Result<Topology> synthetic_topology(const SysfsRoot& root) {
  auto info = read_meminfo(root, kProcMeminfo);
  if (!info) return tl::unexpected(info.error());
  const std::string file = root.resolve(kProcMeminfo).string();
  NumaNode node;
  node.id = 0;
  auto total = meminfo_field(*info, "MemTotal", file);
  if (!total) return tl::unexpected(total.error());
  auto free = meminfo_available(*info, file);
  if (!free) return tl::unexpected(free.error());
  node.total_bytes = *total;
  node.free_bytes = *free;
  auto cpus = host_cpus(root);
  if (!cpus) return tl::unexpected(cpus.error());
  node.cpus = std::move(*cpus);
  node.distances = {kLocalDistance};
  Topology topology;
  topology.numa_present = false;
  topology.nodes.push_back(std::move(node));
  return topology;
}

Result<std::vector<KernelMemoryTier>> read_memory_tiers(const SysfsRoot& root) {
  std::vector<KernelMemoryTier> tiers;
  if (!root.exists(kTierDir)) return tiers;
  for (const auto& name : root.list(kTierDir, "memory_tier")) {
    const int id = numbered_suffix(name, "memory_tier");
    if (id < 0) continue;
    auto nodes = read_id_list(root, std::string(kTierDir) + "/" + name + "/nodelist");
    if (!nodes) return tl::unexpected(nodes.error());
    tiers.push_back(KernelMemoryTier{id, std::move(*nodes)});
  }
  // Directory order is lexical ("memory_tier22" < "memory_tier4"); tier ids
  // are ordered by speed, so sort numerically.
  std::sort(tiers.begin(), tiers.end(),
            [](const KernelMemoryTier& a, const KernelMemoryTier& b) { return a.id < b.id; });
  return tiers;
}

}  // namespace

Result<Topology> discover_topology(const SysfsRoot& root) {
  if (!root.exists(kNodeDir)) return synthetic_topology(root);

  Topology topology;
  topology.numa_present = true;
  auto ids = node_set(root, "has_memory");
  if (!ids) return tl::unexpected(ids.error());
  // node<N>/distance has one column per online node, in id order, including
  // nodes without memory that `nodes` leaves out.
  auto online = node_set(root, "online");
  if (!online) return tl::unexpected(online.error());

  std::vector<std::vector<int>> raw_distances;
  for (const int id : *ids) {
    const std::string dir = std::string(kNodeDir) + "/node" + std::to_string(id);
    if (!root.exists(dir)) {
      return fail(ENOENT, root.resolve(std::string(kNodeDir) + "/has_memory").string() +
                              " lists node " + std::to_string(id) + " but " +
                              root.resolve(dir).string() + " does not exist");
    }
    NumaNode node;
    node.id = id;
    auto cpus = read_id_list(root, node_path(id, "cpulist"));
    if (!cpus) return tl::unexpected(cpus.error());
    node.cpus = std::move(*cpus);
    auto memory = read_node_memory(root, node, true);
    if (!memory) return tl::unexpected(memory.error());
    auto distances = read_distances(root, node_path(id, "distance"));
    if (!distances) return tl::unexpected(distances.error());
    raw_distances.push_back(std::move(*distances));
    topology.nodes.push_back(std::move(node));
  }
  if (topology.nodes.empty()) {
    return fail(ENOENT, root.resolve(kNodeDir).string() + ": no NUMA node with memory");
  }

  for (size_t i = 0; i < topology.nodes.size(); ++i) {
    const std::string file = root.resolve(node_path(topology.nodes[i].id, "distance")).string();
    if (raw_distances[i].size() != online->size()) {
      return fail(EINVAL, file + ": " + std::to_string(raw_distances[i].size()) +
                              " distances, but " + std::to_string(online->size()) +
                              " online node(s)");
    }
    for (const auto& target : topology.nodes) {
      const auto it = std::find(online->begin(), online->end(), target.id);
      if (it == online->end()) {
        return fail(EINVAL, root.resolve(std::string(kNodeDir) + "/online").string() +
                                ": node " + std::to_string(target.id) +
                                " has memory but is not listed online");
      }
      topology.nodes[i].distances.push_back(raw_distances[i][it - online->begin()]);
    }
  }

  auto tiers = read_memory_tiers(root);
  if (!tiers) return tl::unexpected(tiers.error());
  topology.memory_tiers = std::move(*tiers);
  for (const auto& tier : topology.memory_tiers) {
    for (const int id : tier.nodes) {
      for (auto& node : topology.nodes) {
        if (node.id == id) node.memory_tier = tier.id;
      }
    }
  }
  return topology;
}

Result<void> refresh_free_memory(const SysfsRoot& root, Topology& topology) {
  if (!topology.numa_present) {
    auto info = read_meminfo(root, kProcMeminfo);
    if (!info) return tl::unexpected(info.error());
    auto free = meminfo_available(*info, root.resolve(kProcMeminfo).string());
    if (!free) return tl::unexpected(free.error());
    for (auto& node : topology.nodes) node.free_bytes = *free;
    return {};
  }
  // Read everything first so a failure leaves `topology` untouched.
  std::vector<NumaNode> fresh = topology.nodes;
  for (auto& node : fresh) {
    auto r = read_node_memory(root, node, false);
    if (!r) return r;
  }
  for (size_t i = 0; i < fresh.size(); ++i) topology.nodes[i].free_bytes = fresh[i].free_bytes;
  return {};
}

}  // namespace cxlpool::hal
