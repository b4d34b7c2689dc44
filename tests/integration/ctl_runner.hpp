// SPDX-License-Identifier: Apache-2.0
// Running the real cxlpoolctl against a test daemon's socket.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/child_process.hpp"

namespace cxlpool::integration {

// `cxlpoolctl --socket SOCKET ARGS...`.
ProgramResult run_ctl(const std::string& socket, std::vector<std::string> args, const ProgramOptions& options = {});

// `cxlpoolctl --socket SOCKET --json ARGS...`, parsed. A test failure and
// null when it exits non-zero or prints something that is not JSON.
nlohmann::json run_ctl_json(const std::string& socket, std::vector<std::string> args);

}  // namespace cxlpool::integration
