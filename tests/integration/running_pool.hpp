// SPDX-License-Identifier: Apache-2.0
// A started daemon, an admin connection to it and the emulated tier's id:
// where the tests that allocate on the pool begin. Start it with
// ASSERT_TRUE(pool.start()) so that a daemon that did not come up ends the
// test there.
#pragma once

#include <cstdint>
#include <memory>

#include <gtest/gtest.h>

#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {

struct RunningPool {
  explicit RunningPool(const TestConfig& config = {}) : daemon(config.render()) {}

  // Starts the daemon, connects as admin and looks up the emulated tier.
  testing::AssertionResult start();

  DaemonProcess daemon;
  std::unique_ptr<Connection> admin;
  uint32_t emu = 0;
};

}  // namespace cxlpool::integration
