// SPDX-License-Identifier: Apache-2.0
// Checks on the daemon's log text.
#pragma once

#include <string>

namespace cxlpool::integration {

// The first line of `log` whose message repeats its logger's name
// ("kvstore: kvstore: started ..."), or "" when every line names its
// component once.
std::string line_repeating_its_logger(const std::string& log);

}  // namespace cxlpool::integration
