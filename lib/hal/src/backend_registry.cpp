// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/backend_registry.hpp"

#include <algorithm>
#include <cerrno>

#include "backend_filter.hpp"
#include "backend_select.hpp"

namespace cxlpool::hal {
namespace {

std::string excluded_reason(const BackendFilter& filter) {
  return std::string("excluded by ") + kBackendFilterVariable + "=" + filter.text;
}

// Linked descriptors of one class, most preferred first, explicit-only last.
std::vector<const BackendDescriptor*> linked_of(BackendClass cls) {
  std::vector<const BackendDescriptor*> out;
  for (const auto& e : linked_backends()) {
    if (e.descriptor != nullptr && e.cls == cls) out.push_back(e.descriptor);
  }
  std::stable_sort(out.begin(), out.end(), [](const BackendDescriptor* a, const BackendDescriptor* b) {
    const auto key = [](const BackendDescriptor* d) { return d->rank < 0 ? 1 << 30 : d->rank; };
    return key(a) < key(b);
  });
  return out;
}

// `only`: that backend alone; empty: every one of the class.
void report_class(BackendClass cls, const BackendFilter& filter, const std::string& why_excluded,
                  std::string_view only, std::vector<BackendReport>& out) {
  for (const BackendDescriptor* d : linked_of(cls)) {
    if (!only.empty() && only != d->name) continue;
    if (!filter.allows(cls, d->name)) {
      out.push_back({backend_class_name(cls), d->name, BackendState::kNotPresent, why_excluded});
      continue;
    }
    BackendReport r = d->probe();
    r.cls = backend_class_name(cls);
    r.name = d->name;
    out.push_back(std::move(r));
  }
  for (const auto& e : linked_backends()) {
    if (e.descriptor == nullptr && e.cls == cls && (only.empty() || only == e.name)) {
      out.push_back({backend_class_name(cls), e.name, BackendState::kNotCompiled, e.reason});
    }
  }
}

// Reports under the environment's filter. One that does not parse allows
// nothing to be chosen; the reports still list every backend, with the
// parse error as the reason, so `cxlpoolctl backends` shows it.
std::vector<BackendReport> reports_for(std::span<const BackendClass> classes, std::string_view only = {}) {
  auto filter = backend_filter_from_environment(linked_backends());
  std::string why_excluded;
  BackendFilter none;
  if (filter) {
    why_excluded = excluded_reason(*filter);
  } else {
    why_excluded = filter.error().message;
    none.exclude = true;
    for (const auto& e : linked_backends()) none.names.emplace_back(e.name);
  }
  std::vector<BackendReport> out;
  for (BackendClass cls : classes) report_class(cls, filter ? *filter : none, why_excluded, only, out);
  return out;
}

}  // namespace

bool wants_best_backend(std::string_view name) { return name.empty() || name == "auto"; }

Error backend_error(const BackendDescriptor& d, const Error& error) {
  return Error{error.code, std::string(backend_class_name(d.cls)) + " " + d.name + ": " + error.message};
}

std::vector<BackendReport> probe_backends(BackendClass cls) { return reports_for(std::span(&cls, 1)); }

std::optional<BackendReport> probe_backend(BackendClass cls, std::string_view name) {
  if (name.empty()) return std::nullopt;
  auto reports = reports_for(std::span(&cls, 1), name);
  if (reports.empty()) return std::nullopt;
  return std::move(reports.front());
}

std::vector<BackendReport> probe_all_backends() {
  std::vector<BackendClass> all;
  for (int c = 0; c < kBackendClassCount; ++c) all.push_back(static_cast<BackendClass>(c));
  return reports_for(all);
}

std::vector<std::string> usable_backend_names(BackendClass cls) {
  std::vector<std::string> names;
  auto filter = backend_filter_from_environment(linked_backends());
  if (!filter) return names;
  for (const BackendDescriptor* d : linked_of(cls)) {
    if (filter->allows(cls, d->name)) names.emplace_back(d->name);
  }
  return names;
}

Result<void> check_backend_filter() {
  auto filter = backend_filter_from_environment(linked_backends());
  if (!filter) return tl::unexpected(filter.error());
  return {};
}

Result<const BackendDescriptor*> resolve_backend(BackendClass cls, std::string_view name) {
  auto filter = backend_filter_from_environment(linked_backends());
  if (!filter) return tl::unexpected(filter.error());
  const std::string what = std::string(backend_class_name(cls)) + " backend '" + std::string(name) + "'";
  std::string known;
  for (const auto& e : linked_backends()) {
    if (e.cls != cls) continue;
    known += std::string(known.empty() ? "" : ", ") + e.name;
    if (name != e.name) continue;
    if (e.descriptor == nullptr) return fail(ENOTSUP, what + " is not compiled in: " + e.reason);
    if (!filter->allows(cls, e.name)) return fail(ENOTSUP, what + " is " + excluded_reason(*filter));
    return e.descriptor;
  }
  return fail(EINVAL, "no " + what + " (known: " + known + ")");
}

Result<std::vector<const BackendDescriptor*>> best_backend_order(BackendClass cls, BackendSkips* skipped) {
  auto filter = backend_filter_from_environment(linked_backends());
  if (!filter) return tl::unexpected(filter.error());
  std::vector<const BackendDescriptor*> order;
  for (const BackendDescriptor* d : linked_of(cls)) {
    if (d->rank < 0) continue;
    if (!filter->allows(cls, d->name)) {
      if (skipped != nullptr) skipped->push_back({d->name, excluded_reason(*filter), BackendState::kNotPresent});
      continue;
    }
    order.push_back(d);
  }
  if (skipped != nullptr) {
    for (const auto& e : linked_backends()) {
      if (e.descriptor == nullptr && e.cls == cls) {
        skipped->push_back({e.name, std::string("not compiled: ") + e.reason, BackendState::kNotCompiled});
      }
    }
  }
  if (order.empty()) {
    return fail(ENODEV, std::string("no ") + backend_class_name(cls) + " backend may be chosen here" +
                            (filter->text.empty() ? "" : " (" + excluded_reason(*filter) + ")"));
  }
  return order;
}

Result<std::vector<const BackendDescriptor*>> backends_offering(BackendClass cls, std::string_view what,
                                                                bool (*offers)(const BackendDescriptor&),
                                                                BackendSkips* skipped) {
  BackendSkips passed;
  auto order = best_backend_order(cls, &passed);
  if (!order && order.error().code != ENODEV) return tl::unexpected(order.error());
  std::vector<const BackendDescriptor*> out;
  if (order) {
    for (const BackendDescriptor* d : *order) {
      if (offers(*d)) out.push_back(d);
    }
  }
  if (skipped != nullptr) skipped->insert(skipped->end(), passed.begin(), passed.end());
  if (out.empty()) {
    std::string why;
    for (const auto& p : passed) why += (why.empty() ? "" : "; ") + p.name + ": " + p.reason;
    return fail(ENOTSUP, std::string("no ") + backend_class_name(cls) + " backend here can " + std::string(what) +
                             (why.empty() ? "" : " (" + why + ")"));
  }
  return out;
}

}  // namespace cxlpool::hal
