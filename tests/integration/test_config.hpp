// SPDX-License-Identifier: Apache-2.0
// The configuration the integration tests give cxlpoold: NUMA tiers as
// discovered plus one small emulated tier, debug logging, and whatever keys a
// test adds.
#pragma once

#include <cstdint>
#include <string>

namespace cxlpool::integration {

// The emulated tier every test config declares.
inline constexpr const char* kEmuTier = "emu";
inline constexpr uint64_t kEmuCapacity = 256ull << 20;
inline constexpr uint64_t kMiB = 1ull << 20;

// [daemon] keys for the tests with a second user: anyone may connect to the
// socket and root, the test, is the only admin.
inline constexpr const char* kOpenToAll = "socket_mode = \"0666\"\nadmin_groups = []\n";

// Test configuration: [daemon] keys beyond the defaults the tests need, and
// further tables appended after the emulated tier.
struct TestConfig {
  std::string daemon;
  std::string tables;
  std::string render() const;
};

}  // namespace cxlpool::integration
