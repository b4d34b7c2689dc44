// SPDX-License-Identifier: Apache-2.0
#include "aio_probe.hpp"

#include <libaio.h>

#include <cstring>
#include <string>

namespace cxlpool::drivers {

hal::BackendReport probe_aio() {
  io_context_t context{};
  const int rc = io_setup(1, &context);
  if (rc < 0) {
    return {"BlockEngine", "aio", hal::BackendState::kFailed,
            std::string("io_setup: ") + std::strerror(-rc) +
                (rc == -EAGAIN ? " (fs.aio-max-nr reached)" : "")};
  }
  io_destroy(context);
  return {"BlockEngine", "aio", hal::BackendState::kAvailable, "libaio io_setup/io_submit"};
}

}  // namespace cxlpool::drivers
