// SPDX-License-Identifier: Apache-2.0
// hal::open_transport: the one place that chooses a Transport backend.
#include "backend_select.hpp"
#include "cxlpool/hal/driver/transport_driver.hpp"

namespace cxlpool::hal {
namespace {

// A backend that is only a probe, or whose library finds no provider,
// leaves the next one a chance; bad options do not.
bool next_backend_may_run(const BackendDescriptor&, const Error& error) { return error.code != EINVAL; }

}  // namespace

Result<std::unique_ptr<Transport>> open_transport(std::string_view backend, const TransportOptions& options,
                                                  BackendSkips* skipped) {
  if (auto ok = validate_transport_options(options); !ok) return tl::unexpected(ok.error());
  return open_backend<std::unique_ptr<Transport>>(
      BackendClass::kTransport, backend, skipped,
      [&](const BackendDescriptor& d) {
        return call_operation<TransportOps, &TransportOps::open>(d, "a probe only: no Transport implementation yet",
                                                                 options);
      },
      next_backend_may_run);
}

}  // namespace cxlpool::hal
