// SPDX-License-Identifier: Apache-2.0
// A link in a file of its own ("directly attached": both engines name the
// file; no pod allocator hands the link out). The file lives on a shared
// memory file system (/dev/shm, tmpfs, hugetlbfs) and is mapped shared.
#pragma once

#include <string>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/link.hpp"

namespace cxlpool::devpool_tool {

struct MappedLink {
  Mapping mapping;
  devpool::LinkView view;
};

// Creates (or truncates) `path` and formats a fresh link of geometry `g`
// in it; both engines must attach after this (a channel side attaches to a
// freshly formatted channel only).
Result<void> format_link_file(const std::string& path, const devpool::LinkGeometry& g);

// Maps the link in `path`. When the file is empty or missing it is created
// and formatted with `g` first, under an exclusive lock, so the first of two
// engines started together formats it and the second attaches to that.
Result<MappedLink> open_link_file(const std::string& path, const devpool::LinkGeometry& g);

// The geometry the engines use unless told otherwise: 1024-slot channels of
// 16-byte descriptors and 4 MiB of buffers on each side (2048 frames).
devpool::LinkGeometry default_net_link_geometry(devpool::Coherence coherence);

}  // namespace cxlpool::devpool_tool
