// SPDX-License-Identifier: Apache-2.0
// A clone of a cxlpool client gets its connection and regions back: a new
// connection to the cxlpoold the checkpoint names, made with the clone's
// credentials (the daemon then checks every open as for any client of that
// uid), each named region opened by name on it and each lease leased
// again, filled from the image (docs/ckpt.md "Restoring a cxlpool client").
#pragma once

#include <vector>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::ckpt {

struct ClientResources {
  UniqueFd socket;                  // invalid when the manifest names no cxlpool resources
  std::vector<UniqueFd> regions;    // one per Manifest::regions entry, the region's descriptor
};

// Connects as the manifest's effective uid and gid (with its groups) and
// switches back to the caller's effective credentials after connect (the
// peer credentials are fixed at connect), then opens every named region,
// writable where the process held it writable, and leases a region in
// place of every lease (same size and tier), fills it with the lease's
// pages read from `image_fd` and has the connection answer to the
// recorded id for it (RegionAlias). Errors name the step and the region;
// EACCES/EPERM when the clone's uid may not open a region, EDQUOT/ENOSPC
// when it may not lease one that large.
[[nodiscard]] Result<ClientResources> reconnect_client(const Manifest& manifest, int image_fd);

}  // namespace cxlpool::ckpt
