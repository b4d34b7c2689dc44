// SPDX-License-Identifier: Apache-2.0
// The systemd journal's native protocol through libsystemd; the build picks
// log_journal_systemd.cpp when it has libsystemd, log_journal_none.cpp
// otherwise (then logging stays on stderr).
#pragma once

#include <string>
#include <vector>

namespace cxlpool::daemon {

// Whether this build sends to the journal (it has libsystemd).
bool have_journal();

// One journal entry of "FIELD=value" strings. 0 or a negative errno.
int journal_send(const std::vector<std::string>& fields);

}  // namespace cxlpool::daemon
