// SPDX-License-Identifier: Apache-2.0
// `cxlpoolctl ckpt ...` output: the checkpoint replies as JSON and as text.
// Pure functions of the replies, so their shape is unit-tested.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cxlpool/proto/messages.hpp"

namespace cxlpool::ctl {

// List: an array ordered by name.
nlohmann::json ckpt_list_json(const proto::CkptListReply& reply);
std::string ckpt_list_text(const proto::CkptListReply& reply);

nlohmann::json ckpt_restore_json(const proto::CkptRestoreReply& reply);
std::string ckpt_restore_text(const std::string& name, const proto::CkptRestoreReply& reply);

}  // namespace cxlpool::ctl
