// SPDX-License-Identifier: Apache-2.0
// Result lines of a VM test: printed, and appended to a file the host reads
// back from the guest's results share.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace cxlpool::vmtest {

class Report {
 public:
  // Lines go to `path`; with an empty path to $CXLPOOL_VM_RESULTS/<test>.txt
  // when run-in-vm.sh set that variable, else only to stdout.
  Report(std::string test_name, const std::string& path);
  ~Report();
  Report(const Report&) = delete;
  Report& operator=(const Report&) = delete;

  void line(const std::string& text);
  // Logs "FAIL: message" and returns 1, the failing exit status.
  int failure(const std::string& message);
  // "<what> node<from>->node<to>: N MiB in X ms = Y MiB/s (memcpy Z MiB/s, ratio R)".
  void throughput(const std::string& what, int from, int to, uint64_t bytes, uint64_t elapsed_ns,
                  double memcpy_mib_per_s);

 private:
  std::string test_name_;
  std::FILE* file_ = nullptr;
};

}  // namespace cxlpool::vmtest
