// SPDX-License-Identifier: Apache-2.0
// cxlpoold: the cxlpool host daemon.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "config.hpp"
#include "config_host_checks.hpp"
#include "cxlpool/common/default_paths.hpp"
#include "daemon.hpp"
#include "logging.hpp"

using namespace cxlpool;
using namespace cxlpool::daemon;

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitConfig = 3;
constexpr int kExitStart = 4;

Result<std::filesystem::path> resolve_state_dir(const std::string& flag, const Config& config) {
  if (!flag.empty()) return std::filesystem::path(flag);
  if (!config.state_dir.empty()) return config.state_dir;
  auto dir = default_state_dir();
  if (!dir) return tl::unexpected(dir.error());
  return std::filesystem::path(*dir);
}

// The embedded default's SSD tier: a bounded log file in the state
// directory, so that a first run shows all three tiers of the KV store
// (chunks demoted from CXL to SSD and read back). 64 MiB: the state
// directory is usually a tmpfs. The directory must exist for the file;
// --check-config creates nothing and leaves the tier out when it does not.
constexpr const char* kEmbeddedSsdFile = "kv-ssd.log";
constexpr uint64_t kEmbeddedSsdBytes = 64ull << 20;

void add_embedded_ssd_tier(Config& config, const std::filesystem::path& state_dir, bool may_create) {
  if (!config.kvstore.enabled || !config.kvstore.ssd_path.empty()) return;
  std::error_code ec;
  if (!std::filesystem::is_directory(state_dir, ec)) {
    if (!may_create || !std::filesystem::create_directories(state_dir, ec)) return;
    // As the daemon creates it (Daemon::setup_socket): reachable by clients.
    ::chmod(state_dir.c_str(), 0755);
  }
  config.kvstore.ssd_path = (std::filesystem::absolute(state_dir) / kEmbeddedSsdFile).string();
  config.kvstore.ssd_bytes = kEmbeddedSsdBytes;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cxlpoold — tiered memory pool daemon for LLM inference hosts"};
  std::string config_file;
  std::string state_dir;
  bool check_only = false;
  bool show_version = false;
  app.add_option("--config", config_file, "TOML configuration file (default: the embedded default)");
  app.add_option("--state-dir", state_dir,
                 "Directory for the control socket and lock (default: /run/cxlpool as root, "
                 "$XDG_RUNTIME_DIR/cxlpool otherwise)");
  app.add_flag("--check-config", check_only, "Validate the configuration, print the result and exit");
  app.add_flag("--version", show_version, "Print the version and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  if (show_version) {
    std::printf("cxlpoold %s\n", CXLPOOL_VERSION_STRING);
    return 0;
  }

  Result<Config> config = config_file.empty() ? Result<Config>(embedded_default_config())
                                              : load_config_file(config_file);
  if (!config) {
    std::fprintf(stderr, "cxlpoold: %s\n", config.error().message.c_str());
    return kExitConfig;
  }
  auto dir = resolve_state_dir(state_dir, *config);
  if (!dir) {
    std::fprintf(stderr, "cxlpoold: %s\n", dir.error().message.c_str());
    return kExitConfig;
  }
  if (config_file.empty()) add_embedded_ssd_tier(*config, *dir, !check_only);
  if (auto ok = check_config_on_host(*config); !ok) {
    std::fprintf(stderr, "cxlpoold: %s\n", ok.error().message.c_str());
    return kExitConfig;
  }
  if (check_only) {
    std::printf("configuration OK (%s); state dir %s; %zu emulated tier(s)\n", config->source.c_str(),
                dir->c_str(), config->emulated_tiers.size());
    return 0;
  }

  // Blocked before any thread exists (the migration worker, library helpers)
  // so that all inherit the mask and only the event loop's signalfd sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop_signals, sig);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  init_logging(config->log_level);
  auto log = logger("daemon");
  notice(*log, "cxlpoold {} starting (pid {})", CXLPOOL_VERSION_STRING, ::getpid());
  std::optional<std::filesystem::path> config_path;
  if (!config_file.empty()) config_path = std::filesystem::absolute(config_file);
  auto daemon = Daemon::create(std::move(*config), std::move(*dir), config_path);
  if (!daemon) {
    const ScopedLogFields fields({.error = daemon.error().code});
    log->error("cannot start: {}", daemon.error().message);
    return kExitStart;
  }
  return (*daemon)->run();
}
