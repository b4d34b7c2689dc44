// SPDX-License-Identifier: Apache-2.0
// Byte sizes on the command line: "6M", "512K", "1G", plain bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cxlpool::infer {

std::optional<uint64_t> parse_size(const std::string& text);

}  // namespace cxlpool::infer
