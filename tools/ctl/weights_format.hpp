// SPDX-License-Identifier: Apache-2.0
// `cxlpoolctl weights ...` output: the shared-weights replies as JSON and as
// text tables. Pure functions of the replies, so their shape is unit-tested.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cxlpool/proto/messages.hpp"

namespace cxlpool::ctl {

// List: an array ordered by model name; `resident_fraction` is
// resident/total bytes (1 for a model without tensor bytes).
nlohmann::json weights_list_json(const proto::WeightsListReply& reply);
std::string weights_list_text(const proto::WeightsListReply& reply);

nlohmann::json weights_unload_json(const std::string& model, const proto::WeightsUnloadReply& reply);
std::string weights_unload_text(const std::string& model, const proto::WeightsUnloadReply& reply);

}  // namespace cxlpool::ctl
