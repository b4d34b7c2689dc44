// SPDX-License-Identifier: Apache-2.0
// ioengine=devpool: a pooled SSD served by cxlpool-devpool-blk, reached
// through libcxlpool's block API (cxlpool/blk.h) over a link in shared
// memory. The job's buffers are allocated in the link's buffer area, so the
// backend's O_DIRECT reads land in them with no copy, as the application's
// would. The job's filename is the link file unless devpool_link= names it;
// the backend owns the SSD, so cxlpool-io lays out nothing.
//
// A link serves one handle at a time, so one handle per link stays open for
// the whole run and its jobs take turns on it (EBUSY for two jobs on one
// link at the same time); the next process gets the link when this one
// exits.
//
// Engine options: devpool_link=PATH, devpool_timeout_ms=N (a backend silent
// this long with I/O outstanding is dead: ETIMEDOUT; default 10000).
// Through the pod allocator instead of a link file: devpool_socket=PATH
// (the daemon's socket; default socket when only devpool_host is given),
// devpool_host=NAME (the frontend's host; default: the host name),
// devpool_device=NAME|HOST/NAME (a preferred device). A failed backend is
// then replaced by the attachment's backup leg without failing the job.
#pragma once

#include <memory>

#include "engine.hpp"

namespace cxlpool::io {

// ETIMEDOUT/ENOTCONN without a backend serving the link, EPROTO for a file
// that holds no storage link.
Result<std::unique_ptr<Engine>> open_devpool_engine(const JobSpec& job, const EngineTarget& target);

// Closes the link handles jobs shared (ending their attachments); the run
// is over, no engine of it is open.
void close_devpool_links();

}  // namespace cxlpool::io
