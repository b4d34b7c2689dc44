// SPDX-License-Identifier: Apache-2.0
// The clone's eventfds, pipes, socketpairs and listening unix sockets, made
// again at their numbers before its files are opened (docs/ckpt.md
// "Descriptors").
#pragma once

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

// Every fd in manifest.fd_objects, at its number with its flags, with a
// pipe's capacity and bytes, an eventfd's counter, a listener's address and
// backlog (a stale socket file at its path removed first). Descriptors in
// [3, scratch_from) must be free; the ones it makes for a moment at or above
// scratch_from are closed again. Errors: the failing call, naming the fd.
Result<void> recreate_fd_objects(const Manifest& manifest, int scratch_from);

}  // namespace cxlpool::ckpt
