// SPDX-License-Identifier: Apache-2.0
// No binary of the project may depend on libcuda (or cudart): one linked to
// the driver, or to the toolkit's stub, does not start on a machine without a
// GPU. This runs in a test executable that links the CUDA backend, and checks
// itself plus every path listed in CXLPOOL_NO_LIBCUDA_PATHS (':'-separated;
// missing files are reported, not failed: they may simply not be built).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "elf_needed.hpp"

namespace cxlpool::test {
namespace {

std::string self_path() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

bool mentions_cuda_runtime(const std::string& text) {
  return text.find("libcuda") != std::string::npos || text.find("libcudart") != std::string::npos;
}

std::vector<std::string> paths_to_check() {
  std::vector<std::string> out = {self_path()};
  if (const char* env = std::getenv("CXLPOOL_NO_LIBCUDA_PATHS")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      const size_t end = std::min(list.find(':', start), list.size());
      if (end > start) out.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  return out;
}

TEST(NoLibcuda, ParserSeesLibcOfThisExecutable) {
  // Guards against a parser that finds nothing and so "passes" everything.
  auto needed = elf_needed(self_path());
  ASSERT_TRUE(needed) << needed.error().message;
  EXPECT_NE(std::find(needed->begin(), needed->end(), "libc.so.6"), needed->end());
}

TEST(NoLibcuda, DirectDependencies) {
  int checked = 0;
  for (const std::string& path : paths_to_check()) {
    if (::access(path.c_str(), R_OK) != 0) {
      std::printf("not built, not checked: %s\n", path.c_str());
      continue;
    }
    auto needed = elf_needed(path);
    ASSERT_TRUE(needed) << needed.error().message;
    for (const std::string& lib : *needed) {
      EXPECT_FALSE(mentions_cuda_runtime(lib)) << path << " needs " << lib;
    }
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(NoLibcuda, TransitiveDependenciesPerLdd) {
  if (::access("/usr/bin/ldd", X_OK) != 0) GTEST_SKIP() << "ldd is not installed";
  for (const std::string& path : paths_to_check()) {
    if (::access(path.c_str(), R_OK) != 0) continue;
    FILE* p = ::popen(("/usr/bin/ldd '" + path + "' 2>&1").c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), p) != nullptr) out += buf;
    const int status = ::pclose(p);
    // ldd fails on static libraries and scripts; those have no dependencies.
    if (status != 0) continue;
    EXPECT_FALSE(mentions_cuda_runtime(out)) << path << ":\n" << out;
  }
}

}  // namespace
}  // namespace cxlpool::test
