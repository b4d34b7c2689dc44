// SPDX-License-Identifier: Apache-2.0
// Checks of a parsed configuration against the host it is about to run on:
// what the file alone cannot tell (does this directory exist, is that path
// a symbolic link, does this machine have the memory a tier declares).
// `cxlpoold --check-config` and the start run the same checks.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "config.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::daemon {

// All of the checks below with this host's memory and swap.
Result<void> check_config_on_host(const Config& config);

// EINVAL: an emulated tier declares more than `host_bytes` (memory + swap):
// its memfd could never be backed, and the tier would fail at random later.
Result<void> check_emulated_capacity(const Config& config, uint64_t host_bytes);

// kvstore.ssd_path (nothing to check when empty). ELOOP: a symbolic link
// (the daemon never follows one there); EINVAL: neither a regular file nor
// a block device, or a new file without kvstore.ssd_bytes; ENOENT: its
// directory does not exist; the lstat error otherwise.
Result<void> check_ssd_path(const KvStoreSection& kv);

// pod.secret_file and pod.etcd_password_file (nothing to check when
// empty): load_pod_secret's and load_etcd_password's checks
// (pod/pod_auth.hpp) with the daemon's uid `daemon_uid`: a regular file of
// root or that uid, no access for group or others, 32..4096 bytes (the
// secret) or 1..4096 (the password).
Result<void> check_pod_secret(const PodSection& pod, uid_t daemon_uid);

// Physical memory plus swap, in bytes (sysinfo).
uint64_t host_memory_and_swap_bytes();

}  // namespace cxlpool::daemon
