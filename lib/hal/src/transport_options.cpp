// SPDX-License-Identifier: Apache-2.0
// The option checks every Transport driver shares.
#include <arpa/inet.h>

#include "cxlpool/hal/driver/transport_driver.hpp"

namespace cxlpool::hal {

Result<void> validate_transport_options(const TransportOptions& o) {
  const std::uint32_t c = o.chunk_bytes;
  if (c < 4096 || c > (64u << 20) || (c & (c - 1)) != 0) {
    return fail(EINVAL, "transport: chunk size " + std::to_string(c) + " is not a power of two from 4 KiB to 64 MiB");
  }
  if (o.max_attempts == 0 || o.max_attempts > 64) return fail(EINVAL, "transport: attempts must be 1..64");
  if (o.op_timeout.count() <= 0 || o.rail_retry_after.count() <= 0) {
    return fail(EINVAL, "transport: the operation timeout and rail retry time must be positive");
  }
  if (o.rails.size() > 8) return fail(EINVAL, "transport: at most 8 rails");
  for (const std::string& rail : o.rails) {
    unsigned char buf[sizeof(in6_addr)];
    if (::inet_pton(AF_INET, rail.c_str(), buf) != 1 && ::inet_pton(AF_INET6, rail.c_str(), buf) != 1) {
      return fail(EINVAL, "transport: rail address '" + rail + "' is not an IPv4 or IPv6 address");
    }
  }
  if (o.provider.empty() || o.provider.size() > 32) return fail(EINVAL, "transport: bad provider name");
  if (o.host_id.size() > 64) return fail(EINVAL, "transport: host id longer than 64 characters");
  return {};
}

}  // namespace cxlpool::hal
