// SPDX-License-Identifier: Apache-2.0
#include "vm_options.hpp"

#include <cstdio>
#include <cstdlib>

#include "page_placement.hpp"

namespace cxlpool::vmtest {

std::optional<VmTestOptions> parse_vm_test_options(int argc, char** argv, VmTestOptions defaults) {
  VmTestOptions o = std::move(defaults);
  const bool takes_size = o.size_mib != 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (o.takes_socket && arg == "--socket" && has_value) {
      o.socket = argv[++i];
    } else if (takes_size && arg == "--size-mib" && has_value) {
      o.size_mib = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--report" && has_value) {
      o.report_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s%s%s [--report FILE]\n", argv[0], o.takes_socket ? " [--socket PATH]" : "",
                   takes_size ? " [--size-mib N]" : "");
      return std::nullopt;
    }
  }
  if (takes_size && o.size_mib == 0) {
    std::fprintf(stderr, "--size-mib must be positive\n");
    return std::nullopt;
  }
  return o;
}

int finish(Report& report, int rc) {
  report.line(rc == 0 ? "PASS" : rc == 77 ? "SKIP" : "FAIL");
  return rc;
}

int skip_without_node(int node) {
  if (numa_node_exists(node)) return 0;
  std::printf("SKIP: no NUMA node %d (run this inside tests/vm/run-in-vm.sh)\n", node);
  return 77;
}

}  // namespace cxlpool::vmtest
