// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/mapping.hpp"

#include <string>

namespace cxlpool {

Result<Mapping> Mapping::map(size_t length, int prot, int flags, int fd, off_t offset) {
  void* addr = ::mmap(nullptr, length, prot, flags, fd, offset);
  if (addr == MAP_FAILED) return fail_errno("mmap " + std::to_string(length) + " bytes");
  return Mapping(addr, length);
}

}  // namespace cxlpool
