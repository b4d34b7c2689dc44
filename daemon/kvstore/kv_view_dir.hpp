// SPDX-License-Identifier: Apache-2.0
// kvstore.view_dir: a tmpfs directory the namespace views are made in,
// instead of memfds. What it is for: a tmpfs mounted with huge=within_size
// (or always) backs the views with 2 MiB pages whatever the host's
// shmem_enabled (memfds follow that setting, `never` on many hosts). A slot
// that passes to another namespace is punched from the old view and
// faulted into the new one; on 4 KiB pages that is 512 faults per 2 MiB
// slot, about nine times the copy that follows it on the test VM, on
// 2 MiB pages one (docs/perf.md).
#pragma once

#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::daemon {

// A directory itself (not a symbolic link) on tmpfs; the error names the key
// and what to mount there.
Result<void> check_view_dir(const std::string& dir);

// The huge= option of the tmpfs mount holding dir ("within_size", "never",
// ...), "never" when it has none, "" when no mount holds it.
std::string view_dir_huge_pages(const std::string& dir);

// An unnamed file of `bytes` in dir (O_TMPFILE), mode 0400: nobody else can
// reopen it through /proc/PID/fd (as with the memfds: docs in kv_views.hpp).
Result<UniqueFd> create_view_file(const std::string& dir, const std::string& name, uint64_t bytes);

}  // namespace cxlpool::daemon
