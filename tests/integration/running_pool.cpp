// SPDX-License-Identifier: Apache-2.0
#include "running_pool.hpp"

namespace cxlpool::integration {

testing::AssertionResult RunningPool::start() {
  if (auto started = daemon.start(); !started) return started;
  admin = connect_admin(daemon.socket());
  if (!admin) return testing::AssertionFailure() << "no admin connection to " << daemon.socket();
  emu = tier_named(*admin, kEmuTier).id;
  return testing::AssertionSuccess();
}

}  // namespace cxlpool::integration
