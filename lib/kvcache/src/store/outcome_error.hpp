// SPDX-License-Identifier: Apache-2.0
// Crossings between the data path's outcomes and Result/Error: a device
// failure that surfaced as an Error inside the SSD log becomes kDeviceError
// carrying its errno, and an outcome that ends a control call (flush, a
// namespace drop) becomes an Error naming what failed.
#pragma once

#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/kv_status.hpp"

namespace cxlpool::kvcache {

[[nodiscard]] inline KvOutcome device_failure(const Error& e) { return KvOutcome::device_error(e.code); }

[[nodiscard]] inline tl::unexpected<Error> outcome_error(const KvOutcome& o, const std::string& what) {
  const int code = to_errno(o);
  if (o.status == KvStatus::kDeviceError) return fail(code, errno_message(what, code));
  return fail(code, what + ": " + std::string(to_string(o.status)));
}

}  // namespace cxlpool::kvcache
