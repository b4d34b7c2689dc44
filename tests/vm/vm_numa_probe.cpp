// SPDX-License-Identifier: Apache-2.0
// Guest-side check that the kernel gives us a usable memory-only NUMA node,
// independent of cxlpoold: anonymous memory bound to node 1 lands there,
// move_pages() moves it to node 0 and back intact. Prints the raw
// move_pages() rate next to memcpy, the ceiling for any daemon migration.
//
// usage: vm_numa_probe [--size-mib N] [--report FILE]
// exit: 0 ok, 1 failure, 77 no memory-only node 1 (not in the VM guest)
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/units.hpp"
#include "memcpy_baseline.hpp"
#include "memory_pattern.hpp"
#include "page_placement.hpp"
#include "report.hpp"
#include "vm_options.hpp"

namespace vt = cxlpool::vmtest;

namespace {

constexpr int kDramNode = 0;
constexpr int kCxlNode = 1;
constexpr uint64_t kSeed = 0x6e756d6170726f62ull;

int run(size_t bytes, vt::Report& report) {
  if (int rc = vt::skip_without_node(kCxlNode); rc != 0) return rc;
  auto cpus = vt::numa_node_cpulist(kCxlNode);
  if (!cpus) return report.failure(cpus.error().message);
  if (!cpus->empty()) return report.failure("node 1 has CPUs (" + *cpus + "), expected memory only");
  report.line("node1 is memory-only (cpulist empty)");

  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto map = cxlpool::Mapping::map(bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
  if (!map) return report.failure(map.error().message);
  if (auto r = vt::bind_range_to_node(map->addr(), bytes, kCxlNode); !r) {
    return report.failure(r.error().message);
  }
  vt::fill_pattern(map->addr(), bytes, kSeed);

  auto check = [&](int node, const char* when) -> bool {
    auto nodes = vt::query_page_nodes(map->addr(), bytes, page);
    if (!nodes) {
      report.failure(nodes.error().message);
      return false;
    }
    if (auto r = vt::expect_all_on_node(*nodes, node); !r) {
      report.failure(std::string(when) + ": " + r.error().message);
      return false;
    }
    if (auto r = vt::verify_pattern(map->addr(), bytes, kSeed); !r) {
      report.failure(std::string(when) + ": " + r.error().message);
      return false;
    }
    report.line(std::string(when) + ": all " + std::to_string(nodes->size()) +
                " pages on node " + std::to_string(node) + ", pattern intact");
    return true;
  };
  if (!check(kCxlNode, "after mbind+touch")) return 1;

  auto baseline = vt::memcpy_mib_per_s(bytes, 3);
  if (!baseline) return report.failure(baseline.error().message);

  for (const auto& [from, to] : {std::pair{kCxlNode, kDramNode}, std::pair{kDramNode, kCxlNode}}) {
    const uint64_t start = cxlpool::monotonic_ns();
    auto moved = vt::move_range_to_node(map->addr(), bytes, page, to, false);
    if (!moved) return report.failure(moved.error().message);
    report.throughput("move_pages", from, to, bytes, cxlpool::monotonic_ns() - start, *baseline);
    if (*moved > 0) report.line("(" + std::to_string(*moved) + " busy pages needed a retry)");
    if (!check(to, ("after move to node " + std::to_string(to)).c_str())) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto options = vt::parse_vm_test_options(argc, argv, {.size_mib = 64});
  if (!options) return 2;
  vt::Report report("vm_numa_probe", options->report_path);
  return vt::finish(report, run(options->size_mib * cxlpool::kMiB, report));
}
