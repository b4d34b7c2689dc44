// SPDX-License-Identifier: Apache-2.0
// hal::open_net_port: the one place that chooses a NetPort backend.
#include "backend_select.hpp"
#include "cxlpool/hal/driver/net_port_driver.hpp"

namespace cxlpool::hal {
namespace {

// A backend that is a probe only, or that the kernel refuses (no
// permission for its socket family, a family not built into the kernel),
// leaves the next one a chance; an interface that does not exist does not.
bool next_backend_may_run(const BackendDescriptor&, const Error& error) {
  return error.code != ENODEV && error.code != EINVAL;
}

}  // namespace

Result<std::unique_ptr<NetPort>> open_net_port(std::string_view backend, const std::string& interface,
                                               const NetPortOptions& options, BackendSkips* skipped) {
  return open_backend<std::unique_ptr<NetPort>>(
      BackendClass::kNetPort, backend, skipped,
      [&](const BackendDescriptor& d) {
        return call_operation<NetPortOps, &NetPortOps::open>(d, "a probe only: no NetPort implementation yet",
                                                             interface, options);
      },
      next_backend_may_run);
}

}  // namespace cxlpool::hal
