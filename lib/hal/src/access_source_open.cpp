// SPDX-License-Identifier: Apache-2.0
// hal::open_access_source: the one place that chooses an AccessSource
// backend.
#include "backend_select.hpp"
#include "cxlpool/hal/driver/access_source_driver.hpp"

namespace cxlpool::hal {

Result<std::unique_ptr<AccessSource>> open_access_source(std::string_view backend, const AccessSourceOptions& options,
                                                         BackendSkips* skipped) {
  return open_backend<std::unique_ptr<AccessSource>>(
      BackendClass::kAccessSource, backend, skipped,
      [&](const BackendDescriptor& d) {
        return call_operation<AccessSourceOps, &AccessSourceOps::open>(d, "no AccessSource implementation", options);
      },
      // A source that cannot be set up here (no DAMON, no sampling PMU, not
      // allowed) leaves the next one its chance.
      [](const BackendDescriptor&, const Error&) { return true; });
}

}  // namespace cxlpool::hal
