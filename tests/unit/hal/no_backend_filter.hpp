// SPDX-License-Identifier: Apache-2.0
// A fixture for tests of lib/hal's registry against their own backend
// tables: each test chooses backends with no filter from the environment
// ($CXLPOOL_BACKENDS) and leaves none behind for the next.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::hal {

class NoBackendFilter : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv(kBackendFilterVariable); }
  void TearDown() override { ::unsetenv(kBackendFilterVariable); }
};

}  // namespace cxlpool::hal
