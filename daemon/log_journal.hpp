// SPDX-License-Identifier: Apache-2.0
// The systemd journal's native protocol through libsystemd; the build picks
// log_journal_systemd.cpp when it has libsystemd, log_journal_none.cpp
// otherwise (then logging stays on stderr).
#pragma once

#include <string>
#include <vector>

namespace cxlpool::daemon {

inline constexpr bool kHaveJournal =
#ifdef CXLPOOL_HAVE_JOURNAL
    true;
#else
    false;
#endif

// One journal entry of "FIELD=value" strings. 0 or a negative errno.
int journal_send(const std::vector<std::string>& fields);

}  // namespace cxlpool::daemon
