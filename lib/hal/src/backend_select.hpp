// SPDX-License-Identifier: Apache-2.0
// What the class front-ends (open_block_device, open_gpu_vmm, ...) share:
// resolving a named backend and walking the best-available order.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/driver/backend_driver.hpp"

namespace cxlpool::hal {

// True for "" and "auto".
bool wants_best_backend(std::string_view name);

// The linked descriptor of class `cls` called `name`: ENOTSUP when it is
// not linked into this program (with the build's reason) or excluded by
// CXLPOOL_BACKENDS, EINVAL when no backend of the class has that name.
Result<const BackendDescriptor*> resolve_backend(BackendClass cls, std::string_view name);

// The class's auto-selectable, linked, allowed backends by rank. Those
// passed over go to *skipped with the reason.
Result<std::vector<const BackendDescriptor*>> best_backend_order(BackendClass cls, BackendSkips* skipped);

// "BlockEngine uring: <message>": every registry error names the backend.
Error backend_error(const BackendDescriptor& d, const Error& error);

// The class's best-order backends for which `offers` holds: the ones with
// an optional operation. Backends passed over for being not compiled in or
// excluded go to *skipped; when none is left, ENOTSUP "no <class> backend
// here can <what>" naming them.
Result<std::vector<const BackendDescriptor*>> backends_offering(BackendClass cls, std::string_view what,
                                                                bool (*offers)(const BackendDescriptor&),
                                                                BackendSkips* skipped);

// For backends_offering: whether the backend's Ops has operation `Op` (a
// pointer to the function-pointer member, e.g. &MemTierOps::regions).
template <typename Ops, auto Op>
bool has_operation(const BackendDescriptor& d) {
  const Ops* ops = backend_ops<Ops>(d);
  return ops != nullptr && ops->*Op != nullptr;
}

// Calls the backend's operation `Op` (as for has_operation) with `args`;
// ENOTSUP `missing` where the backend has no such operation.
template <typename Ops, auto Op, typename... Args>
auto call_operation(const BackendDescriptor& d, const char* missing, Args&&... args)
    -> decltype((std::declval<const Ops&>().*Op)(std::forward<Args>(args)...)) {
  const Ops* ops = backend_ops<Ops>(d);
  if (ops == nullptr || ops->*Op == nullptr) return fail(ENOTSUP, missing);
  return (ops->*Op)(std::forward<Args>(args)...);
}

// Opens through `try_open(descriptor)`: the named backend, or the best one
// in order while `moves_on(descriptor, error)` says the failure is the
// backend's and not the target's.
template <typename T, typename TryOpen, typename MovesOn>
Result<T> open_backend(BackendClass cls, std::string_view name, BackendSkips* skipped, TryOpen&& try_open,
                       MovesOn&& moves_on) {
  if (!wants_best_backend(name)) {
    auto d = resolve_backend(cls, name);
    if (!d) return tl::unexpected(d.error());
    auto opened = try_open(**d);
    if (!opened) return tl::unexpected(backend_error(**d, opened.error()));
    return opened;
  }
  auto order = best_backend_order(cls, skipped);
  if (!order) return tl::unexpected(order.error());
  Error last{ENODEV, std::string("no ") + backend_class_name(cls) + " backend can run here"};
  for (const BackendDescriptor* d : *order) {
    auto opened = try_open(*d);
    if (opened) return opened;
    last = backend_error(*d, opened.error());
    if (!moves_on(*d, opened.error())) return tl::unexpected(last);
    if (skipped != nullptr) skipped->push_back({d->name, opened.error().message});
  }
  return tl::unexpected(last);
}

}  // namespace cxlpool::hal
