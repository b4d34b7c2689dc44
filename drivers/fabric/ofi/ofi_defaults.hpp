// SPDX-License-Identifier: Apache-2.0
// libfabric settings this backend needs other than the library's defaults,
// given through its environment variables (it reads them once, when first
// used): call before any other libfabric call. A variable already set is
// left as it is, so an operator can still choose.
#pragma once

namespace cxlpool::drivers::ofi {

void apply_libfabric_defaults();

}  // namespace cxlpool::drivers::ofi
