// SPDX-License-Identifier: Apache-2.0
#include "test_config.hpp"

namespace cxlpool::integration {

std::string TestConfig::render() const {
  return "[daemon]\n"
         "socket_group = \"\"\n"
         "log_level = \"debug\"\n" +
         daemon +
         "\n"
         "[[emulated_tier]]\n"
         "name = \"" + std::string(kEmuTier) + "\"\n"
         "capacity = " + std::to_string(kEmuCapacity) + "\n"
         "latency_ns = 300\n"
         "bandwidth_mbps = 15000\n"
         "\n" +
         tables;
}

}  // namespace cxlpool::integration
