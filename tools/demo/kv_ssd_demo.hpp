// SPDX-License-Identifier: Apache-2.0
// The KV store's third tier in the README demo: a prompt's first chunks are
// pushed out of DRAM and CXL by newer ones, land on the SSD log, and a get
// reads them back.
#pragma once

#include <string>

// Returns the number of failed checks (0: OK, also when the daemon has no
// SSD tier, which it says). Prints what it does.
int run_kv_ssd_demo(const std::string& socket);
