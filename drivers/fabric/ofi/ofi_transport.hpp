// SPDX-License-Identifier: Apache-2.0
// The ofi Transport: libfabric rails (tcp;ofi_rxm here, verbs;ofi_rxm on
// RDMA fabrics) plus an shm endpoint for peers on the same host.
#pragma once

#include <memory>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/transport.hpp"

namespace cxlpool::drivers::ofi {

Result<std::unique_ptr<hal::Transport>> open_transport(const hal::TransportOptions& options);

}  // namespace cxlpool::drivers::ofi
