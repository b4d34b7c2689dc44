// SPDX-License-Identifier: Apache-2.0
// kvstore.view_dir: a tmpfs directory the namespace views are made in,
// instead of memfds. What it is for: a tmpfs mounted with huge=within_size
// (or always) backs the views with 2 MiB pages whatever the host's
// shmem_enabled says about memfds (`never` on many hosts; only `deny`
// overrides a mount). A slot that passes to another namespace is punched
// from the old view and faulted into the new one; on 4 KiB pages that is 512
// faults per 2 MiB slot, about nine times the copy that follows it on the
// test VM, on 2 MiB pages one (docs/perf.md).
//
// The mount must have no size limit (size=0): a tmpfs that fills up answers
// a write through a mapping with SIGBUS, and any reader can allocate pages
// of its views by touching holes in its read-only mapping, so a limit would
// let a client end the daemon mid-copy. Without one the views' pages are
// memory charged like a memfd's. The directory must be the daemon's own
// (its owner, writable by nobody else), so that no client can give a view
// a name; it is opened once, and every view is made relative to that
// descriptor.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::daemon {

// The directory, opened O_PATH without following a link, once checked: a
// directory owned by `owner` and writable by nobody else, on a tmpfs with no
// size limit. The error names the key and what is wrong (ELOOP, ENOTDIR,
// EPERM, EINVAL).
Result<UniqueFd> open_view_dir(const std::string& dir, uid_t owner);

// What --check-config and the start check: open_view_dir's checks.
Result<void> check_view_dir(const std::string& dir, uid_t owner);

// The page size the views in dir get, in words for the log: the huge= of
// the tmpfs that holds it ("within_size", "never", ...), or "deny"/"force"
// when the host's shmem_enabled overrides every mount. mountinfo: the text
// of /proc/self/mountinfo; shmem_enabled: that sysfs file's text ("" where
// the kernel has no THP).
std::string view_dir_huge_pages(const std::string& dir, std::string_view mountinfo, std::string_view shmem_enabled);
// The same, read from this host.
std::string view_dir_huge_pages(const std::string& dir);
// Whether those words mean 2 MiB pages.
bool huge_pages_in_views(std::string_view words);

// What every view's descriptor gets before it leaves the daemon, memfd or
// file: mode 0400 of the daemon's uid (a memfd is created 0777, and a
// read-only descriptor could otherwise be reopened writable through
// /proc/self/fd/N; this way nobody else can reopen it at all), and its
// size. `what` names it in the error.
Result<void> finish_view(int fd, const std::string& what, uint64_t bytes);

// An unnamed file of `bytes` in the opened directory (O_TMPFILE | O_EXCL:
// it can never be linked into a name), mode 0400: nobody else can reopen it
// through /proc/PID/fd (as with the memfds: docs in kv_views.hpp). Errors:
// the open's, fchmod's or ftruncate's errno, naming the key.
Result<UniqueFd> create_view_file(int dir_fd, const std::string& dir, const std::string& name, uint64_t bytes);

}  // namespace cxlpool::daemon
