// SPDX-License-Identifier: Apache-2.0
// The cxlpool-io binary the integration tests run: $CXLPOOL_IO (meson sets
// it to the build's), else the one on PATH.
#pragma once

#include <string>

#include "support/environment.hpp"

namespace cxlpool::integration {

inline std::string io_binary() {
  const std::string set = test::env_value("CXLPOOL_IO");
  return set.empty() ? "cxlpool-io" : set;
}

}  // namespace cxlpool::integration
