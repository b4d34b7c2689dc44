// SPDX-License-Identifier: Apache-2.0
#include "ckpt_service.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cxlpool/ckpt/capture.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/units.hpp"
#include "image_estimate.hpp"
#include "client_resources.hpp"
#include "trace_permission.hpp"

#ifndef CXLPOOL_INSTALLED_RESTORE
#define CXLPOOL_INSTALLED_RESTORE "/usr/local/bin/cxlpool-restore"
#endif

namespace cxlpool::daemon {
namespace {

constexpr int kMpolDefault = 0;
constexpr int kMpolBind = 2;

const char* policy_word(proto::CkptPolicy policy) {
  switch (policy) {
    case proto::CkptPolicy::kMow: return "mow";
    case proto::CkptPolicy::kMoa: return "moa";
    case proto::CkptPolicy::kHybrid: return "hybrid";
  }
  return "mow";
}

uint64_t realtime_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// The pages the capture writes into its memfd are allocated by this
// thread: binding the thread binds the image to the tier's node.
void bind_thread_memory(int node) {
  if (node < 0) return;
  unsigned long mask[4] = {0, 0, 0, 0};
  if (node >= static_cast<int>(sizeof mask * 8)) return;
  mask[node / 64] |= 1ul << (node % 64);
  (void)::syscall(SYS_set_mempolicy, kMpolBind, mask, sizeof mask * 8);
}

void unbind_thread_memory(int node) {
  if (node >= 0) (void)::syscall(SYS_set_mempolicy, kMpolDefault, nullptr, 0);
}

// The keeper's one child is the clone: its pid in the daemon's namespace.
pid_t keeper_child(pid_t keeper) {
  std::ifstream in("/proc/" + std::to_string(keeper) + "/task/" + std::to_string(keeper) + "/children");
  long pid = 0;
  return in >> pid ? static_cast<pid_t>(pid) : 0;
}

// Every child of every thread of `pid`.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (long child = 0; in >> child;) out.push_back(static_cast<pid_t>(child));
  }
  return out;
}

// Ends a restorer that did not finish in time, and what it started: stopped
// first so that it starts no keeper while they are listed, then each keeper
// (pid 1 of its namespace: its clone goes with it), then the restorer.
// Only the restorer's own children are touched.
void kill_restorer(pid_t restorer) {
  ::kill(restorer, SIGSTOP);
  int status = 0;
  // The stop has landed once waitpid reports it (or the restorer is gone).
  const pid_t seen = ::waitpid(restorer, &status, WUNTRACED);
  if (seen == restorer && !WIFSTOPPED(status)) return;
  for (pid_t keeper : children_of(restorer)) ::kill(keeper, SIGKILL);
  ::kill(restorer, SIGKILL);
  while (::waitpid(restorer, &status, 0) < 0 && errno == EINTR) {
  }
}

// Runs cxlpool-restore with the image as fd 3, its report pipe as fd 4 and
// `stdio` as 0-2; returns its exit status (or 128 + signal). ETIMEDOUT when
// it has not exited within `timeout` (it and its keepers are then killed).
Result<int> run_restorer(const std::filesystem::path& program, int image, int report, const int stdio[3],
                         proto::CkptPolicy policy, uint32_t count, std::chrono::milliseconds timeout) {
  const std::string count_text = std::to_string(count);
  const std::string path = program.string();
  const char* argv[] = {path.c_str(), "/proc/self/fd/3", "--policy", policy_word(policy), "--count",
                        count_text.c_str(), "--no-wait", "--quiet", "--report-fd", "4", nullptr};
  const pid_t child = ::fork();
  if (child < 0) return fail_errno("fork for cxlpool-restore");
  if (child == 0) {
    // Only async-signal-safe calls from here: the daemon has other threads.
    // Every source first moves above the targets, so none is overwritten.
    int moved[5];
    const int sources[5] = {stdio[0], stdio[1], stdio[2], image, report};
    for (int i = 0; i < 5; ++i) {
      moved[i] = ::fcntl(sources[i], F_DUPFD, 10);
      if (moved[i] < 0) ::_exit(126);
    }
    for (int i = 0; i < 5; ++i) {
      if (::dup2(moved[i], i) < 0) ::_exit(126);
    }
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the daemon's loop blocks the signals it reads
    ::syscall(SYS_close_range, 5u, ~0u, 0u);
    ::execv(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
  if (!pidfd) {
    const int code = errno;
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    return fail(code, "pidfd_open for cxlpool-restore: " + std::string(std::strerror(code)));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd p{pidfd.get(), POLLIN, 0};
    const int ready = left > 0 ? ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1'000'000))) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0) break;
    if (ready < 0 || left <= 0) {
      kill_restorer(child);
      return fail(ETIMEDOUT, "cxlpool-restore did not restore every clone within " +
                                 std::to_string(timeout.count()) + " ms; it and the clones it started were killed");
    }
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return fail_errno("waiting for cxlpool-restore");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::filesystem::path find_restore_program() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> candidates;
  if (!ec) {
    candidates.push_back(exe.parent_path() / "cxlpool-restore");
    candidates.push_back(exe.parent_path() / ".." / "tools" / "ckpt-restore" / "cxlpool-restore");
  }
  candidates.emplace_back(CXLPOOL_INSTALLED_RESTORE);
  for (const auto& c : candidates) {
    if (::access(c.c_str(), X_OK) == 0) return std::filesystem::weakly_canonical(c, ec);
  }
  return {};
}

CkptService::CkptService(RegionPool& pool, std::filesystem::path restore_program,
                         std::chrono::milliseconds restore_timeout)
    : pool_(pool),
      restore_program_(std::move(restore_program)),
      restore_timeout_(restore_timeout),
      worker_([](Task& t) { run(t); },
              [](Task& t) { t.done = fail(ECANCELED, "the daemon is stopping"); }) {}

CkptService::~CkptService() { stop(); }

Result<void> CkptService::start() { return worker_.start(); }

void CkptService::stop() { worker_.stop(); }

uint32_t CkptService::default_tier() const {
  const auto& tiers = pool_.tiers();
  for (const Tier& t : tiers) {
    if (t.kind == proto::TierKind::kCxl) return t.id;
  }
  return tiers.empty() ? 0 : tiers.back().id;
}

Result<void> CkptService::create(const proto::CkptCreate& req, std::vector<UniqueFd> fds, const CkptClient& client,
                                 CkptWaiter waiter) {
  auto failed = [&](Error e) -> Result<void> {
    ++counters_.create_errors;
    return tl::unexpected(std::move(e));
  };
  if (checkpoints_.contains(req.name) || pending_names_.contains(req.name)) {
    return failed({EEXIST, "a checkpoint '" + req.name + "' exists already"});
  }
  const uint32_t tier_id = req.tier_id == proto::kNoTier ? default_tier() : req.tier_id;
  if (tier_id >= pool_.tiers().size()) return failed({ENOENT, "no tier with id " + std::to_string(tier_id)});
  Task task;
  if (req.pid == 0) {
    if (fds.size() != 1) return failed({EINVAL, "CkptCreate with pid 0 takes the target's pidfd"});
    auto pid = pidfd_pid(fds[0].get());
    if (!pid) return failed(pid.error());
    task.pid = *pid;
    task.pidfd = std::move(fds[0]);
  } else {
    if (!fds.empty()) return failed({EINVAL, "CkptCreate with a pid takes no descriptor"});
    task.pid = static_cast<pid_t>(req.pid);
    // Pinned before the permission check: the capture runs later, on the
    // worker, and must freeze the process that was checked (CaptureOptions::pidfd).
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, task.pid, 0));
    if (pidfd < 0) return failed({errno, "no process " + std::to_string(task.pid)});
    task.pidfd = UniqueFd(pidfd);
  }
  if (!client.who.admin) {
    auto target = read_process_creds(task.pid);
    if (!target) return failed({target.error().code, "no process " + std::to_string(task.pid)});
    auto dumpable = process_dumpable(task.pid, target->uid[1]);
    if (!dumpable) return failed(dumpable.error());
    auto mine = read_process_creds(client.pid);
    const std::string why = mine ? trace_refusal(client.who.uid, client.who.gid, mine->cap_effective, *target,
                                                 *dumpable)
                                 : std::string("the client's own process cannot be read");
    if (!why.empty()) {
      ++counters_.refused;
      return failed({EPERM, "may not checkpoint process " + std::to_string(task.pid) + ": " + why});
    }
  }
  if (const uint64_t limit = pool_.quota_limit(client.who.uid, tier_id); limit != 0) {
    auto estimate = image_estimate(task.pid);
    if (!estimate) return failed(estimate.error());
    uint64_t held = pool_.quota_used(client.who.uid, tier_id);
    for (const auto& [name, p] : pending_names_) {
      if (p.uid == client.who.uid && p.tier_id == tier_id) held += p.estimate;
    }
    const Tier& tier = pool_.tiers()[tier_id];
    if (held >= limit || *estimate > limit - held) {
      return failed({EDQUOT, "checkpoint of process " + std::to_string(task.pid) + " refused before capture: its " +
                                 format_size(*estimate) + " of private memory would exceed uid " +
                                 std::to_string(client.who.uid) + "'s quota on tier " + tier.name + " (" +
                                 format_size(held) + " of " + format_size(limit) + " held or being captured)"});
    }
    task.max_image_bytes = limit - held;
    pending_names_[req.name] = {client.who.uid, tier_id, *estimate};
  } else {
    pending_names_[req.name] = {client.who.uid, tier_id, 0};
  }
  const Tier& tier = pool_.tiers()[tier_id];
  task.capture = true;
  task.name = req.name;
  task.waiter = waiter;
  task.who = client.who;
  task.kill_after = (req.flags & proto::kCkptKillAfter) != 0;
  task.tier_id = tier_id;
  task.region_files = pool_region_files(pool_, lease_holder_);
  task.control_socket = control_socket_;
  task.node = tier.numa_node >= 0 && pool_.topology().nodes.size() > 1 ? tier.numa_node : -1;
  worker_.submit(std::move(task));
  return {};
}

Result<void> CkptService::restore(const proto::CkptRestore& req, std::vector<UniqueFd> fds, const Requester& who,
                                  CkptWaiter waiter) {
  auto failed = [&](Error e) -> Result<void> {
    ++counters_.restore_errors;
    return tl::unexpected(std::move(e));
  };
  auto it = checkpoints_.find(req.name);
  if (it == checkpoints_.end()) return failed({ENOENT, "no checkpoint '" + req.name + "'"});
  if (!who.admin && who.uid != it->second.entry.owner_uid) {
    return failed({EPERM, "checkpoint '" + req.name + "' belongs to uid " +
                              std::to_string(it->second.entry.owner_uid)});
  }
  if (!fds.empty() && fds.size() != 3) {
    return failed({EINVAL, "CkptRestore takes three descriptors (stdin, stdout, stderr) or none"});
  }
  if (restore_program_.empty()) return failed({ENOENT, "cxlpool-restore was not found"});
  const Region* region = pool_.find(it->second.entry.region_id);
  if (region == nullptr) return failed({ENOENT, "checkpoint '" + req.name + "' has lost its region"});
  auto image = pool_.read_only_fd(*region);
  if (!image) return failed(image.error());
  Task task;
  task.capture = false;
  task.name = req.name;
  task.waiter = waiter;
  task.who = who;
  task.image = std::move(*image);
  task.stdio = std::move(fds);
  task.policy = req.policy;
  task.count = req.count;
  task.program = restore_program_;
  task.timeout = restore_timeout_;
  worker_.submit(std::move(task));
  return {};
}

Result<void> CkptService::remove(const std::string& name, const Requester& who) {
  auto it = checkpoints_.find(name);
  if (it == checkpoints_.end()) return fail(ENOENT, "no checkpoint '" + name + "'");
  if (!who.admin && who.uid != it->second.entry.owner_uid) {
    return fail(EPERM, "checkpoint '" + name + "' belongs to uid " + std::to_string(it->second.entry.owner_uid));
  }
  pool_.release_handle(it->second.entry.region_id);
  checkpoints_.erase(it);
  ++counters_.removes;
  return {};
}

proto::CkptListReply CkptService::list() const {
  proto::CkptListReply reply;
  for (const auto& [name, c] : checkpoints_) {
    proto::CkptEntry e = c.entry;
    // The region may have moved (region migrate, the tiering engine).
    if (const Region* r = pool_.find(e.region_id)) e.tier_id = r->tier_id;
    reply.checkpoints.push_back(e);
    if (reply.checkpoints.size() == proto::kMaxListEntries) break;
  }
  return reply;
}

void CkptService::add_counters(std::vector<proto::Counter>& out) const {
  auto add = [&](std::string name, uint64_t value) { out.push_back({std::move(name), value}); };
  add("ckpt.checkpoints", checkpoints_.size());
  emit_counters("ckpt.", counters_, add);
}

void CkptService::run(Task& task) {
  const uint64_t start = monotonic_ns();
  if (task.capture) {
    capture(task);
  } else {
    start_clones(task);
  }
  task.elapsed_ns = monotonic_ns() - start;
}

void CkptService::capture(Task& task) {
  ckpt::CaptureOptions options;
  options.kill_after = task.kill_after;
  options.pidfd = task.pidfd.get();
  options.max_image_bytes = task.max_image_bytes;
  options.region_files = std::move(task.region_files);
  // getpeername shows the path as bound; a restore may run in another cwd.
  options.cxlpool_socket = std::filesystem::absolute(task.control_socket).string();
  options.cxlpool_socket_inodes = control_socket_inodes(task.pid, task.pidfd.get(), task.control_socket);
  bind_thread_memory(task.node);
  auto image = ckpt::capture_to_image(task.pid, options);
  unbind_thread_memory(task.node);
  if (!image) {
    task.done = tl::unexpected(image.error());
    return;
  }
  struct stat st {};
  if (::fstat(image->fd.get(), &st) != 0 || st.st_size <= 0) {
    task.done = fail_errno("sizing the image");
    return;
  }
  task.image_bytes = static_cast<uint64_t>(st.st_size);
  task.threads = static_cast<uint32_t>(image->manifest.threads.size());
  task.image_fd = std::move(image->fd);
}

void CkptService::start_clones(Task& task) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    task.done = fail_errno("pipe for cxlpool-restore");
    return;
  }
  UniqueFd report_read(report[0]), report_write(report[1]);
  UniqueFd null_fd;
  int stdio[3];
  if (task.stdio.size() == 3) {
    for (int i = 0; i < 3; ++i) stdio[i] = task.stdio[i].get();
  } else {
    null_fd.reset(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!null_fd) {
      task.done = fail_errno("open /dev/null");
      return;
    }
    for (int& fd : stdio) fd = null_fd.get();
  }
  auto status =
      run_restorer(task.program, task.image.get(), report_write.get(), stdio, task.policy, task.count, task.timeout);
  report_write.reset();
  if (!status) {
    task.done = tl::unexpected(status.error());
    return;
  }
  // The keepers hold the pipe's write end too: read what is there, not to EOF.
  (void)::fcntl(report_read.get(), F_SETFL, O_NONBLOCK);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(report_read.get(), buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  std::istringstream lines(text);
  long ns_pid = 0, keeper = 0;
  while (lines >> ns_pid >> keeper) {
    const pid_t pid = keeper_child(static_cast<pid_t>(keeper));
    if (ns_pid <= 0 || keeper <= 0 || pid <= 0) continue;
    task.clones.push_back({static_cast<uint32_t>(pid), static_cast<uint32_t>(keeper), static_cast<uint32_t>(ns_pid)});
  }
  if (*status != 0 || task.clones.size() != task.count) {
    task.done = fail(EIO, "cxlpool-restore exited with status " + std::to_string(*status) + " after " +
                              std::to_string(task.clones.size()) + " of " + std::to_string(task.count) +
                              " clones (its messages went to the caller's stderr)");
  }
}

std::vector<CkptFinished> CkptService::finish() {
  std::vector<CkptFinished> out;
  for (Task& task : worker_.take_finished()) {
    out.push_back(task.capture ? finish_capture(task) : finish_restore(task));
  }
  return out;
}

CkptFinished CkptService::finish_capture(Task& task) {
  pending_names_.erase(task.name);
  CkptFinished out{task.waiter, fail(EIO, "")};
  if (!task.done) {
    ++counters_.create_errors;
    out.reply = tl::unexpected(task.done.error());
    return out;
  }
  CreateSpec spec;
  spec.tier_id = task.tier_id;
  spec.size = task.image_bytes;
  spec.kind = proto::RegionKind::kLeased;
  spec.mode = 0600;
  spec.adopt_fd = task.image_fd.get();
  Requester owner = task.who;
  owner.client_id = 0;  // held by the daemon, not by the connection
  auto region = pool_.create(spec, owner);
  if (!region) {
    ++counters_.create_errors;
    out.reply = tl::unexpected(region.error());
    return out;
  }
  proto::CkptEntry e;
  e.region_id = (*region)->id;
  e.image_bytes = task.image_bytes;
  e.created_unix_ns = realtime_ns();
  e.capture_ns = task.elapsed_ns;
  e.tier_id = task.tier_id;
  e.owner_uid = task.who.uid;
  e.pid = static_cast<uint32_t>(task.pid);
  e.threads = task.threads;
  e.name = task.name;
  checkpoints_[task.name] = Checkpoint{e};
  ++counters_.creates;
  counters_.bytes += task.image_bytes;
  counters_.capture_ns += task.elapsed_ns;
  out.reply = proto::Message{proto::CkptListReply{{e}}};
  return out;
}

CkptFinished CkptService::finish_restore(Task& task) {
  CkptFinished out{task.waiter, fail(EIO, "")};
  if (!task.done) {
    ++counters_.restore_errors;
    out.reply = tl::unexpected(task.done.error());
    return out;
  }
  if (auto it = checkpoints_.find(task.name); it != checkpoints_.end()) it->second.entry.restores += task.count;
  ++counters_.restores;
  counters_.clones += task.clones.size();
  counters_.restore_ns += task.elapsed_ns;
  out.reply = proto::Message{proto::CkptRestoreReply{task.elapsed_ns, std::move(task.clones)}};
  return out;
}

void CkptService::clear() {
  for (const auto& [name, c] : checkpoints_) pool_.release_handle(c.entry.region_id);
  checkpoints_.clear();
}

}  // namespace cxlpool::daemon
