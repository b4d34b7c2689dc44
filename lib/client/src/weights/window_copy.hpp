// SPDX-License-Identifier: Apache-2.0
// Copying a layer from the shared region into a window slot. A layer is far
// larger than a core's caches, so by the time the compute reads it the lines
// a plain memcpy pulled into cache (read-for-ownership of every destination
// line) are gone anyway: non-temporal stores skip that read and the
// write-back, which measured ~1.4x memcpy's bandwidth here. Small copies keep
// memcpy (their bytes may still be cached when read).
#pragma once

#include <cstddef>

namespace cxlpool::client {

// Copies below this many bytes use memcpy.
inline constexpr size_t kNonTemporalMinBytes = size_t{1} << 20;

void copy_to_window(void* dst, const void* src, size_t bytes);

}  // namespace cxlpool::client
