// SPDX-License-Identifier: Apache-2.0
// The command line the guest-side VM tests share, and how they end: each
// takes some of --socket PATH, --size-mib N and --report FILE, and logs
// PASS, SKIP or FAIL as its last report line.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "report.hpp"

namespace cxlpool::vmtest {

struct VmTestOptions {
  bool takes_socket = false;
  std::string socket = "/tmp/cxlpool/cxlpoold.sock";
  size_t size_mib = 0;  // the default; 0: the test takes no --size-mib
  std::string report_path;
};

// Parses argv into a copy of `defaults` (the options it takes, and their
// defaults); prints the usage or what is wrong and returns nullopt (exit 2)
// on anything else.
std::optional<VmTestOptions> parse_vm_test_options(int argc, char** argv, VmTestOptions defaults);

// Logs PASS, SKIP (77) or FAIL for the test's exit status and returns it.
int finish(Report& report, int rc);

// 77 after the SKIP line when NUMA node `node` (the guest's CXL-like
// memory-only node) is missing, else 0.
int skip_without_node(int node);

}  // namespace cxlpool::vmtest
