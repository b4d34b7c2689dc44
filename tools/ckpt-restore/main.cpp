// SPDX-License-Identifier: Apache-2.0
// cxlpool-restore IMAGE [--policy mow|moa|hybrid|copy] [--count N] [--prefault]
// [--hot FILE] [--record-hot FILE [--record-ms T]] [--report-fd FD] [--host-pids]: restores
// clones of a checkpointed process (docs/ckpt.md "Restore"), each in a pid
// namespace of its own, and waits for them; records or uses a hot set ("Hot
// sets"). Exit status: the first clone's
// that failed, or 0; 1 when a clone could not be restored.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cxlpool/ckpt/image_reader.hpp"
#include "cxlpool/ckpt/restorer.hpp"
#include "hot_record.hpp"

using namespace cxlpool;
using namespace cxlpool::ckpt;

int main(int argc, char** argv) {
  CLI::App app{"Restore clones of a cxlpool checkpoint image"};
  app.set_version_flag("--version", "cxlpool-restore " CXLPOOL_VERSION_STRING);
  std::string image_path, policy_text = "mow", hot_path, record_path;
  int count = 1, record_ms = 0;
  bool quiet = false, no_wait = false, prefault = false, host_pids = false;
  int report_fd = -1;
  app.add_option("image", image_path, "checkpoint image (cxlpool-ckpt dump)")->required();
  app.add_option("--policy", policy_text, "mow (map the image copy-on-write), moa (fill on access), hybrid (copy "
                                          "the hot pages, map the rest), copy (read every page)");
  app.add_option("--count", count, "clones to restore at once")->check(CLI::Range(1, 1024));
  app.add_flag("--prefault", prefault, "fill the page tables for the image's pages during the restore (mow, "
                                      "hybrid): a slower restore, no page faults on the first pass");
  app.add_option("--hot", hot_path, "hybrid: the hot set file whose pages are copied up front");
  app.add_option("--record-hot", record_path, "write a hot set file from the first clone: the pages it faulted in "
                                              "(moa) or had written (mow)");
  app.add_option("--record-ms", record_ms, "record after this many milliseconds (moa: or at the clone's exit, "
                                           "the default; mow: required)")
      ->check(CLI::Range(0, 86'400'000));
  app.add_flag("--quiet", quiet, "no line per restored clone");
  app.add_option("--report-fd", report_fd, "write 'ORIGINAL_PID KEEPER_PID' for each restored clone to this "
                                           "descriptor (how cxlpoold learns the clones it started)")
      ->check(CLI::Range(3, 1 << 20));
  app.add_flag("--no-wait", no_wait, "exit once every clone is restored, leaving them running");
  app.add_flag("--host-pids", host_pids, "give the clone its original pid and tids in this pid namespace too (they "
                                         "must be free here; one clone): for a GPU driver's checkpoint API");
  CLI11_PARSE(app, argc, argv);

  const auto start = std::chrono::steady_clock::now();
  if (host_pids && count != 1) {
    fmt::print(stderr, "cxlpool-restore: --host-pids restores one clone (its pids exist once here)\n");
    return 2;
  }
  auto policy = parse_policy(policy_text);
  if (!policy) {
    fmt::print(stderr, "cxlpool-restore: {}\n", policy.error().message);
    return 2;
  }
  if (!hot_path.empty() && *policy != RestorePolicy::kHybrid) {
    fmt::print(stderr, "cxlpool-restore: --hot is for the hybrid policy\n");
    return 2;
  }
  if (!record_path.empty() && (no_wait || (*policy != RestorePolicy::kMoa && *policy != RestorePolicy::kMow) ||
                               (*policy == RestorePolicy::kMow && record_ms == 0))) {
    fmt::print(stderr, "cxlpool-restore: --record-hot records a moa clone's faults or, after --record-ms, a mow "
                       "clone's writes, and waits for the clone\n");
    return 2;
  }
  auto image = ImageReader::open(image_path);
  if (!image) {
    fmt::print(stderr, "cxlpool-restore: {}: {}\n", image_path, image.error().message);
    return 1;
  }
  Manifest m = image->manifest();
  if (!hot_path.empty()) {
    if (auto ok = load_hot_set(hot_path, *image, m); !ok) {
      fmt::print(stderr, "cxlpool-restore: {}\n", ok.error().message);
      return 1;
    }
  }
  UniqueFd fault_record;
  if (!record_path.empty() && *policy == RestorePolicy::kMoa) {
    auto fd = create_fault_record();
    if (!fd) {
      fmt::print(stderr, "cxlpool-restore: {}\n", fd.error().message);
      return 1;
    }
    fault_record = std::move(*fd);
  }
  auto host = probe_host();
  if (!host) {
    fmt::print(stderr, "cxlpool-restore: {}\n", host.error().message);
    return 1;
  }
  auto plan = plan_restore(m, *policy, *host);
  if (!plan) {
    fmt::print(stderr, "cxlpool-restore: cannot restore {}: {}\n", image_path, plan.error().message);
    return 1;
  }
  if (prefault) prefault_image_pages(*plan);
  if (auto ok = check_files(m); !ok) {
    fmt::print(stderr, "cxlpool-restore: cannot restore {}: {}\n", image_path, ok.error().message);
    return 1;
  }
  std::fflush(nullptr);
  std::vector<CloneHandle> clones;
  for (int i = 0; i < count; ++i) {
    CloneOptions options;
    options.detach = no_wait;
    options.host_pids = host_pids;
    if (i == 0 && fault_record) {
      options.fault_record_fd = fault_record.get();
      options.record_ms = record_ms;
    }
    auto clone = start_clone(m, *plan, image->fd(), options);
    if (!clone) {
      fmt::print(stderr, "cxlpool-restore: clone {}: {}\n", i + 1, clone.error().message);
      return 1;
    }
    clones.push_back(*clone);
  }
  bool all_restored = true;
  for (size_t i = 0; i < clones.size(); ++i) {
    const CloneReport r = wait_restored(clones[i]);
    if (!r.restored) {
      all_restored = false;
      fmt::print(stderr, "cxlpool-restore: clone {} of {}: {}\n", i + 1, image_path, r.error);
      continue;
    }
    if (report_fd >= 0) {
      const std::string line = fmt::format("{} {}\n", m.process.pid, clones[i].keeper);
      if (::write(report_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) all_restored = false;
    }
    if (!quiet)
      fmt::print(stderr,
                 "cxlpool-restore: clone {}: pid {} (keeper {}) restored in {:.3f} ms, {} policy ({} MiB mapped, {} "
                 "MiB copied, {} MiB lazy)\n",
                 i + 1, m.process.pid, clones[i].keeper, r.restore_ms, policy_name(*policy),
                 plan->mapped_image_bytes >> 20, plan->copied_bytes >> 20, plan->lazy_bytes >> 20);
  }
  if (!quiet) {
    const double total =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "cxlpool-restore: {} clone(s) in {:.3f} ms including reading the image\n", count, total);
  }
  // Test hook: a restorer that hangs once its clones run (how a caller's
  // time limit on a restore is tested).
  if (const char* stall = std::getenv("CXLPOOL_RESTORE_TEST_STALL_MS"); stall != nullptr) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::strtoul(stall, nullptr, 10)));
  }
  if (no_wait) return all_restored ? 0 : 1;
  bool recorded = true;
  if (!record_path.empty() && *policy == RestorePolicy::kMow && all_restored) {
    std::this_thread::sleep_for(std::chrono::milliseconds(record_ms));
    auto kept = save_written_pages(clones[0].keeper, *image, record_path);
    recorded = kept.has_value();
    if (kept && !quiet) fmt::print(stderr, "cxlpool-restore: {} written page(s) saved in {}\n", *kept, record_path);
    if (!kept) fmt::print(stderr, "cxlpool-restore: recording the written pages: {}\n", kept.error().message);
  }
  int first_failure = 0;
  for (CloneHandle& c : clones) {
    const int status = wait_exit(c);
    if (status != 0 && first_failure == 0) first_failure = status;
  }
  if (fault_record && all_restored) {
    auto kept = save_fault_record(fault_record.get(), *image, record_path);
    recorded = kept.has_value();
    if (kept && !quiet) fmt::print(stderr, "cxlpool-restore: {} faulted page(s) saved in {}\n", *kept, record_path);
    if (!kept) fmt::print(stderr, "cxlpool-restore: recording the faulted pages: {}\n", kept.error().message);
  }
  if (!all_restored || !recorded) return 1;
  return first_failure;
}
