// SPDX-License-Identifier: Apache-2.0
// The engines that are a hal::BlockDevice driver underneath: psync (posix:
// pread/pwrite inside submit), io_uring (uring: fixedbufs, registerfiles,
// sqthread_poll, hipri), libaio (aio) and mmap (page-cache copies).
#pragma once

#include <memory>
#include <string_view>

#include "engine.hpp"

namespace cxlpool::io {

// True for the names open_block_engine takes.
bool is_block_engine(std::string_view ioengine);

// True when the engine's BlockEngine backend (psync: posix, io_uring: uring,
// libaio: aio, mmap: mmap) is linked into this program and CXLPOOL_BACKENDS
// allows it; open_block_engine refuses the others with ENOTSUP.
bool block_engine_usable(std::string_view ioengine);

Result<std::unique_ptr<Engine>> open_block_engine(const JobSpec& job, const EngineTarget& target);

}  // namespace cxlpool::io
