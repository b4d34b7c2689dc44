// SPDX-License-Identifier: Apache-2.0
// A TAP interface (IFF_TAP | IFF_NO_PI): the ordinary network interface a
// frontend gives the instances of its host. It exists while the engine
// holds its descriptor and disappears with it.
#pragma once

#include <cstdint>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/net_port.hpp"

namespace cxlpool::devpool_tool {

class TapDevice {
 public:
  // Creates TAP `name` in the caller's network namespace with address
  // `mac` and MTU `mtu`, and brings it up. The descriptor is non-blocking.
  static Result<TapDevice> create(const std::string& name, const hal::MacAddress& mac, uint32_t mtu);

  int fd() const { return fd_.get(); }
  const std::string& name() const { return name_; }

 private:
  TapDevice(UniqueFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}
  UniqueFd fd_;
  std::string name_;
};

}  // namespace cxlpool::devpool_tool
