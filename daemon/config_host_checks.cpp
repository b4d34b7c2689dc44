// SPDX-License-Identifier: Apache-2.0
#include "config_host_checks.hpp"

#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cxlpool/common/units.hpp"
#include "kvstore/kv_view_dir.hpp"
#include "pod/pod_auth.hpp"

namespace cxlpool::daemon {

uint64_t host_memory_and_swap_bytes() {
  struct sysinfo info {};
  if (::sysinfo(&info) != 0) return 0;
  const uint64_t unit = info.mem_unit == 0 ? 1 : info.mem_unit;
  return (uint64_t{info.totalram} + uint64_t{info.totalswap}) * unit;
}

Result<void> check_emulated_capacity(const Config& config, uint64_t host_bytes) {
  if (host_bytes == 0) return {};  // unknown: nothing to compare with
  for (const auto& tier : config.emulated_tiers) {
    if (tier.capacity > host_bytes) {
      return fail(EINVAL, config.source + ": emulated_tier '" + tier.name + "': capacity " +
                              format_size(tier.capacity) + " exceeds this host's memory and swap (" +
                              format_size(host_bytes) + ")");
    }
  }
  return {};
}

Result<void> check_ssd_path(const KvStoreSection& kv) {
  if (kv.ssd_path.empty()) return {};
  const std::string what = "kvstore.ssd_path " + kv.ssd_path;
  struct stat st {};
  if (::lstat(kv.ssd_path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) return fail(ELOOP, what + " is a symbolic link; give the path of the file itself");
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
      char mode[16];
      std::snprintf(mode, sizeof mode, "0%o", static_cast<unsigned>(st.st_mode));
      return fail(EINVAL, what + " is neither a regular file nor a block device (mode " + mode + ")");
    }
    return {};
  }
  if (errno != ENOENT) return fail_errno(what);
  const std::filesystem::path dir = std::filesystem::path(kv.ssd_path).parent_path();
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    return fail(ENOENT, what + ": its directory " + dir.string() + " does not exist");
  }
  if (kv.ssd_bytes == 0) {
    return fail(EINVAL, what + " does not exist and kvstore.ssd_bytes is not set: give the size of the file to create");
  }
  return {};
}

Result<void> check_pod_secret(const PodSection& pod, uid_t daemon_uid) {
  auto secret = load_pod_secret(pod.secret_file, daemon_uid);
  if (!secret) return tl::unexpected(secret.error());
  auto password = load_etcd_password(pod.etcd_password_file, daemon_uid);
  if (!password) return tl::unexpected(password.error());
  return {};
}

Result<void> check_config_on_host(const Config& config) {
  if (auto ok = check_emulated_capacity(config, host_memory_and_swap_bytes()); !ok) return ok;
  if (auto ok = check_pod_secret(config.pod, ::geteuid()); !ok) return ok;
  if (config.kvstore.enabled) {
    if (auto ok = check_ssd_path(config.kvstore); !ok) return ok;
    if (!config.kvstore.view_dir.empty()) {
      if (auto ok = check_view_dir(config.kvstore.view_dir, ::geteuid()); !ok) return ok;
    }
  }
  return {};
}

}  // namespace cxlpool::daemon
