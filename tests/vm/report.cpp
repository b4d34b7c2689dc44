// SPDX-License-Identifier: Apache-2.0
#include "report.hpp"

#include <cinttypes>
#include <cstdlib>

#include "cxlpool/common/units.hpp"

namespace cxlpool::vmtest {

Report::Report(std::string test_name, const std::string& path) : test_name_(std::move(test_name)) {
  std::string target = path;
  if (const char* dir = std::getenv("CXLPOOL_VM_RESULTS"); target.empty() && dir != nullptr) {
    target = std::string(dir) + "/" + test_name_ + ".txt";
  }
  if (!target.empty()) {
    file_ = std::fopen(target.c_str(), "a");
    if (file_ == nullptr) std::perror(target.c_str());
  }
}

Report::~Report() {
  if (file_ != nullptr) std::fclose(file_);
}

void Report::line(const std::string& text) {
  std::printf("%s: %s\n", test_name_.c_str(), text.c_str());
  std::fflush(stdout);
  if (file_ != nullptr) {
    std::fprintf(file_, "%s\n", text.c_str());
    std::fflush(file_);
  }
}

int Report::failure(const std::string& message) {
  line("FAIL: " + message);
  return 1;
}

void Report::throughput(const std::string& what, int from, int to, uint64_t bytes,
                        uint64_t elapsed_ns, double memcpy_mib_per_s) {
  const double ms = static_cast<double>(elapsed_ns) / 1e6;
  const double mib = static_cast<double>(bytes) / static_cast<double>(kMiB);
  const double rate = ms > 0 ? mib / (ms / 1e3) : 0;
  char text[256];
  std::snprintf(text, sizeof(text),
                "%s node%d->node%d: %.0f MiB in %.1f ms = %.1f MiB/s (memcpy %.1f MiB/s, ratio %.3f)",
                what.c_str(), from, to, mib, ms, rate, memcpy_mib_per_s,
                memcpy_mib_per_s > 0 ? rate / memcpy_mib_per_s : 0.0);
  line(text);
}

}  // namespace cxlpool::vmtest
