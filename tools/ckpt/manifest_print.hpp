// SPDX-License-Identifier: Apache-2.0
// A manifest for people (a summary and tables) and for scripts (JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cxlpool/ckpt/manifest.hpp"

namespace cxlpool::ckpt_tool {

nlohmann::json manifest_json(const ckpt::Manifest& manifest);
std::string manifest_text(const ckpt::Manifest& manifest);

}  // namespace cxlpool::ckpt_tool
