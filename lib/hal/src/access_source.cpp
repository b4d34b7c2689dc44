// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/access_source.hpp"

namespace cxlpool::hal {

const char* address_space_name(AddressSpace space) {
  switch (space) {
    case AddressSpace::kPoolRegion: return "region";
    case AddressSpace::kProcess: return "process";
    case AddressSpace::kPhysical: return "physical";
    case AddressSpace::kTrace: return "trace";
  }
  return "unknown";
}

}  // namespace cxlpool::hal
