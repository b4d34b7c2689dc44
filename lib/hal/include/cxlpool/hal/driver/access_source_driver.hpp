// SPDX-License-Identifier: Apache-2.0
// Driver SDK for AccessSource backends (drivers/access/*): the operations an
// access-source driver registers. Users open a source with
// hal::open_access_source.
#pragma once

#include <memory>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/access_source.hpp"
#include "cxlpool/hal/driver/backend_driver.hpp"

namespace cxlpool::hal {

struct AccessSourceOps {
  static constexpr BackendClass kClass = BackendClass::kAccessSource;
  // Sets the source up from the hal-level options (the driver keeps its own
  // configuration type and maps these onto it).
  Result<std::unique_ptr<AccessSource>> (*open)(const AccessSourceOptions& options);
};

}  // namespace cxlpool::hal
