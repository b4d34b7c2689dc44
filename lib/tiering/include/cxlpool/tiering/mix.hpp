// SPDX-License-Identifier: Apache-2.0
// 64-bit key mixing shared by the trackers. Page numbers and addresses are
// highly regular (consecutive, aligned), so every tracker first runs the key
// through a full-avalanche finalizer before taking bits from it.
#pragma once

#include "cxlpool/common/mix64.hpp"

namespace cxlpool::tiering {

using cxlpool::mix64;

}  // namespace cxlpool::tiering
