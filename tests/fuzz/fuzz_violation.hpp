// SPDX-License-Identifier: Apache-2.0
// How a fuzz target reports a broken property: one line on stderr that names
// the target, then abort(), so libFuzzer keeps the input as a crash file and
// the corpus replay fails. Each target defines kFuzzTarget.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace cxlpool::fuzz {

extern const char kFuzzTarget[];

[[noreturn]] inline void violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s: %s\n", kFuzzTarget, what, detail.c_str());
  std::abort();
}

}  // namespace cxlpool::fuzz
