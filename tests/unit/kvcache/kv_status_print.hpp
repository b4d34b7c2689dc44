// SPDX-License-Identifier: Apache-2.0
// gtest printers for the KV data path's outcomes: a failed expectation
// names the status ("not_found"), and a device error its errno.
#pragma once

#include <ostream>

#include "cxlpool/kvcache/kv_status.hpp"

namespace cxlpool::kvcache {

inline void PrintTo(KvStatus s, std::ostream* os) { *os << to_string(s); }

inline void PrintTo(const KvOutcome& o, std::ostream* os) {
  *os << to_string(o.status);
  if (o.status == KvStatus::kDeviceError) *os << " (errno " << to_errno(o) << ")";
}

}  // namespace cxlpool::kvcache
