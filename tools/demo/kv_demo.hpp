// SPDX-License-Identifier: Apache-2.0
// The demo's KV-cache step: one process stores the KV chunks of a prompt, a
// second process finds the shared prefix of its own prompt and reads the
// chunks zero-copy.
#pragma once

#include <string>

// Returns the number of failed checks (0: OK). Prints what it does.
int run_kv_demo(const std::string& socket);
