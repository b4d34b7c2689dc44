// SPDX-License-Identifier: Apache-2.0
// How a fuzz target reports a broken property: one line on stderr that names
// the target, then abort(), so libFuzzer keeps the input as a crash file and
// the corpus replay fails. Each target defines kFuzzTarget. Also the property
// every decoder shares: a rejection carries a documented errno and says why
// (check_rejection; accepted() for a decoder's Result).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "cxlpool/common/result.hpp"

namespace cxlpool::fuzz {

extern const char kFuzzTarget[];

[[noreturn]] inline void violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s: %s\n", kFuzzTarget, what, detail.c_str());
  std::abort();
}

inline void check_rejection(const Error& e, std::initializer_list<int> documented) {
  if (std::find(documented.begin(), documented.end(), e.code) == documented.end()) {
    violated("decode failed with an undocumented errno", e.message);
  }
  if (e.message.empty()) violated("decode failed without a message", "");
}

// Whether a decoder accepted its input; a rejection must pass check_rejection.
template <class T>
bool accepted(const Result<T>& decoded, std::initializer_list<int> documented) {
  if (decoded) return true;
  check_rejection(decoded.error(), documented);
  return false;
}

}  // namespace cxlpool::fuzz
