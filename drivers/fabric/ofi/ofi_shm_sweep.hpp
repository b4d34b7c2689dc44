// SPDX-License-Identifier: Apache-2.0
// The libfabric shm provider keeps an endpoint's region as a file in
// /dev/shm named after the endpoint (cxlpool-PID-N...), and unlinks it when
// the endpoint closes. A daemon killed by a signal never closes it: 16 MiB
// of /dev/shm per crash, for good. A transport sweeps what dead processes
// of ours left before it opens its own.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cxlpool::drivers::ofi {

// The shm endpoint name of a transport of process `pid`.
std::string shm_endpoint_name(long pid, unsigned instance);

// Removes the files in `dir` named after a shm endpoint (shm_endpoint_name)
// of a process that no longer exists, owned by this process's uid (a live
// process, or another user's file, is never touched). Returns how many
// went. Processes sharing `dir` must share a pid namespace, as the daemons
// of one host do.
std::size_t remove_dead_shm_endpoints(const std::string& dir);

}  // namespace cxlpool::drivers::ofi
