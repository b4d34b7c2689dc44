// SPDX-License-Identifier: Apache-2.0
// A BackingFactory for the daemon's unit tests: every region file is a plain
// memfd whatever its tier asks for, so pool logic runs on any host.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "region_pool.hpp"

namespace cxlpool::daemon {

inline Result<Backing> memfd_backing(const Tier&, const std::string& name, uint64_t size, bool) {
  Backing b;
  b.fd.reset(memfd_create(name.c_str(), MFD_CLOEXEC));
  if (!b.fd) return fail_errno("memfd_create");
  b.size = (size + 4095) / 4096 * 4096;
  if (ftruncate(b.fd.get(), static_cast<off_t>(b.size)) != 0) return fail_errno("ftruncate");
  return b;
}

}  // namespace cxlpool::daemon
