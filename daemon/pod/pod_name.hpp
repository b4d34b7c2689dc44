// SPDX-License-Identifier: Apache-2.0
// The rule for pod and member names: 1..64 bytes of [A-Za-z0-9._-], not
// starting with '.'. On its own so that the decoders of peers' messages
// (and their fuzz targets) need nothing else of the daemon.
#pragma once

#include <string_view>

namespace cxlpool::daemon {

bool valid_pod_name(std::string_view name);

}  // namespace cxlpool::daemon
