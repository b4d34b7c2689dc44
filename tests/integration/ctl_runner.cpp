// SPDX-License-Identifier: Apache-2.0
#include "ctl_runner.hpp"

#include <gtest/gtest.h>

#include "daemon_process.hpp"

namespace cxlpool::integration {

ProgramResult run_ctl(const std::string& socket, std::vector<std::string> args, const ProgramOptions& options) {
  args.insert(args.begin(), {ctl_binary(), "--socket", socket});
  return run_program(args, options);
}

nlohmann::json run_ctl_json(const std::string& socket, std::vector<std::string> args) {
  args.insert(args.begin(), "--json");
  const ProgramResult r = run_ctl(socket, args);
  EXPECT_EQ(r.exit_code, 0) << args[1] << ": " << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << args[1] << ": not JSON (" << e.what() << "): " << r.out;
    return nullptr;
  }
}

}  // namespace cxlpool::integration
