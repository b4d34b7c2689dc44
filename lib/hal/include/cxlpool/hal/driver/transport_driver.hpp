// SPDX-License-Identifier: Apache-2.0
// Driver SDK for Transport backends (drivers/fabric/*): the operations a
// transport driver registers. Users open transports with hal::open_transport.
#pragma once

#include <memory>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "cxlpool/hal/transport.hpp"

namespace cxlpool::hal {

struct TransportOps {
  static constexpr BackendClass kClass = BackendClass::kTransport;
  // Null for a backend that is only a probe so far (verbs).
  Result<std::unique_ptr<Transport>> (*open)(const TransportOptions& options);
};

// EINVAL naming the field when options cannot work (chunk size not a power
// of two in range, no attempts, a rail address that is not an IP literal,
// a zero timeout). Every driver checks its options with it first.
Result<void> validate_transport_options(const TransportOptions& options);

}  // namespace cxlpool::hal
