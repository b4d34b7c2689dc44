// SPDX-License-Identifier: Apache-2.0
#include "damon_probe.hpp"

#include <sstream>

#include "damon_fs.hpp"

namespace cxlpool::drivers {

hal::BackendReport probe_damon() { return probe_damon_at("/sys"); }

hal::BackendReport probe_damon_at(const std::string& sysfs_root) {
  hal::BackendReport report{"AccessSource", "damon", hal::BackendState::kNotPresent, ""};
  const DamonFs fs(sysfs_root);
  if (!fs.exists("")) {
    report.detail = "no " + fs.path("") + " (needs Linux 5.18+ with CONFIG_DAMON_SYSFS)";
    return report;
  }
  if (auto w = fs.check_writable("kdamonds/nr_kdamonds"); !w) {
    report.detail = w.error().message + " (needs root or CAP_SYS_ADMIN)";
    return report;
  }
  auto nr = fs.read_u64("kdamonds/nr_kdamonds");
  if (!nr) {
    report.detail = nr.error().message;
    return report;
  }

  // avail_operations lives in a context; the probe may not create one, so
  // it can only look at contexts that exist already.
  std::string ops;
  std::string ops_error;
  uint64_t running = 0;
  for (const uint64_t k : fs.indices("kdamonds")) {
    const std::string kdamond = "kdamonds/" + std::to_string(k);
    if (auto state = fs.read_text(kdamond + "/state"); state && *state == "on") ++running;
    for (const uint64_t c : fs.indices(kdamond + "/contexts")) {
      if (!ops.empty()) break;
      auto text = fs.read_text(kdamond + "/contexts/" + std::to_string(c) + "/avail_operations");
      if (text) {
        ops = *text;
      } else if (ops_error.empty()) {
        ops_error = text.error().message;
      }
    }
  }
  std::istringstream words(ops);
  std::string word;
  std::string listed;
  bool paddr = false;
  while (words >> word) {
    listed += (listed.empty() ? "" : " ") + word;
    paddr = paddr || word == "paddr";
  }
  const std::string counts = std::to_string(*nr) + " kdamond(s), " + std::to_string(running) + " running";
  if (ops.empty()) {
    report.detail = ops_error.empty()
                        ? "cannot tell whether paddr is supported: no DAMON context exists to read "
                          "avail_operations from (" + counts + ")"
                        : ops_error;
    return report;
  }
  if (!paddr) {
    report.detail = "no physical-address monitoring: avail_operations is '" + listed + "'";
    return report;
  }
  report.state = hal::BackendState::kAvailable;
  report.detail = "DAMON sysfs, operations: " + listed + "; " + counts +
                  (*nr == 0 ? "" : " (own kdamond needs nr_kdamonds=0; attach mode only)");
  return report;
}

}  // namespace cxlpool::drivers
