// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/shared_memory.hpp"

#include "cxlpool/common/units.hpp"

namespace cxlpool::hal {

std::string SharedMemory::describe() const {
  std::string out = info_.backend + " " + info_.filesystem;
  if (!info_.path.empty()) out += " " + info_.path;
  out += " (" + format_size(size()) + ", " + (info_.coherent ? "coherent" : "non-coherent") + ")";
  return out;
}

}  // namespace cxlpool::hal
