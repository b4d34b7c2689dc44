// SPDX-License-Identifier: Apache-2.0
#include "ofi_defaults.hpp"

#include <cstdlib>
#include <mutex>

namespace cxlpool::drivers::ofi {

void apply_libfabric_defaults() {
  static std::once_flag once;
  std::call_once(once, [] {
    // rxm sizes each rail's message queue for (128 receives + 128 sends) per
    // peer of the "universe" (1024 by default): 262144 entries, more than
    // soft RoCE (rdma_rxe) allows a queue (32767), so verbs;ofi_rxm could
    // not open an endpoint there. 127 peers per rail is more than a pod has.
    ::setenv("FI_UNIVERSE_SIZE", "127", 0);
  });
}

}  // namespace cxlpool::drivers::ofi
