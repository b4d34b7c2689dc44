// SPDX-License-Identifier: Apache-2.0
// CXLPOOL_BACKENDS: which backends a program may choose at run time.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/driver/backend_driver.hpp"

namespace cxlpool::hal {

struct BackendFilter {
  std::string text;                // as set, for messages
  bool exclude = false;            // "^a,b": everything but a and b
  std::vector<std::string> names;  // empty and !exclude: everything
  std::vector<BackendClass> restricted;  // inclusion lists restrict only the classes they name

  bool allows(BackendClass cls, std::string_view name) const;
};

// Parses `text` against the backends the build knows (`known`): an entry
// naming none of them is EINVAL, so a typo does not silently allow all.
Result<BackendFilter> parse_backend_filter(std::string_view text, std::span<const BackendTableEntry> known);

// The filter from the environment (empty when CXLPOOL_BACKENDS is unset).
Result<BackendFilter> backend_filter_from_environment(std::span<const BackendTableEntry> known);

}  // namespace cxlpool::hal
