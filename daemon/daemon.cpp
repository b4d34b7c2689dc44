// SPDX-License-Identifier: Apache-2.0
#include "daemon.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "cxlpool/hal/backend_registry.hpp"
#include "backing.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/topology.hpp"
#include "cxlpool/proto/socket_io.hpp"
#include "logging.hpp"
#include "service_notify.hpp"

namespace cxlpool::daemon {
namespace {

// epoll tags; sessions use their id with the top bit set.
constexpr uint64_t kTagListen = 1;
constexpr uint64_t kTagSignal = 2;
constexpr uint64_t kTagTick = 3;
constexpr uint64_t kTagWatchdog = 4;
constexpr uint64_t kTagMigration = 5;
constexpr uint64_t kTagTiering = 6;
constexpr uint64_t kTagTieringMoves = 7;
constexpr uint64_t kSessionBit = 1ull << 63;
static_assert(kTagKvIo == kTagTieringMoves + 1 && (kKvDoorbellBit & kSessionBit) == 0);
constexpr uint64_t kTagWeights = kTagKvIo + 1;
constexpr uint64_t kTagDevpool = kTagWeights + 1;
constexpr uint64_t kTagCkpt = kTagDevpool + 1;
constexpr uint64_t kTagPodKv = kTagCkpt + 1;
static_assert(kTagKvCommits == kTagPodKv + 1);
// While spinning, KV ring polls between two looks at epoll (and yields of
// the core): a microsecond or two, so a control message, or a client that
// shares the core, waits no longer than that.
constexpr int kKvSpinPolls = 16;
// Longest sleep while SSD reads are queued (see run()).
constexpr int kKvIoRecheckMs = 10;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

Result<void> epoll_add(int epfd, int fd, uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  if (::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) return fail_errno("epoll_ctl add");
  return {};
}

Result<UniqueFd> make_timer(uint64_t period_ns) {
  UniqueFd fd(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!fd) return fail_errno("timerfd_create");
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(period_ns / 1000000000ull);
  spec.it_value.tv_nsec = static_cast<long>(period_ns % 1000000000ull);
  spec.it_interval = spec.it_value;
  if (::timerfd_settime(fd.get(), 0, &spec, nullptr) != 0) return fail_errno("timerfd_settime");
  return fd;
}

// Migration of pages that other processes map needs MPOL_MF_MOVE_ALL, which
// the kernel grants only with CAP_SYS_NICE.
bool have_cap_sys_nice() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[0].effective & (1u << CAP_SYS_NICE)) != 0;
}

// NUMA nodes that CXL regions (through libcxl) feed as system RAM: their
// tiers are CXL tiers even on hosts whose firmware gives them CPUs.
std::vector<int> cxl_region_nodes() {
  std::vector<int> nodes;
  auto regions = hal::discover_mem_regions();
  if (!regions) {
    logger("daemon")->warn("CXL region discovery failed: {}", regions.error().message);
    return nodes;
  }
  for (const auto& r : *regions) {
    logger("daemon")->info("CXL region {}: {} ({}), {} memdev(s), dax {}, node {}", r.name, format_size(r.size_bytes),
                           r.mode, r.memdevs, r.dax_device.empty() ? "-" : r.dax_device, r.numa_node);
    if (r.numa_node >= 0) nodes.push_back(r.numa_node);
  }
  return nodes;
}

}  // namespace

Result<std::unique_ptr<Daemon>> Daemon::create(Config config, std::filesystem::path state_dir,
                                               std::optional<std::filesystem::path> config_path) {
  auto log = logger("daemon");
  // A filter that names no backend is a typo, not a wish for none.
  if (auto ok = hal::check_backend_filter(); !ok) return tl::unexpected(ok.error());
  std::unique_ptr<Daemon> d(new Daemon());
  d->config_ = std::move(config);
  d->state_dir_ = std::move(state_dir);
  d->config_path_ = std::move(config_path);
  d->socket_path_ = d->state_dir_ / "cxlpoold.sock";
  d->sysfs_ = SysfsRoot(d->config_.sysfs_root);
  d->started_ns_ = monotonic_ns();
  d->move_all_ = have_cap_sys_nice();
  d->resolve_admin_groups();

  auto topology = hal::discover_topology(d->sysfs_);
  if (!topology) return tl::unexpected(topology.error());
  auto tiers = build_tiers(d->config_, *topology, cxl_region_nodes());
  if (!tiers) return tl::unexpected(tiers.error());
  d->placement_ = make_page_placement(*topology);
  if (!d->placement_) log->warn("no NUMA placement backend: regions are not bound to nodes");

  PoolLimits limits{d->config_.max_region_size, d->config_.quota_default_bytes, d->config_.quota_rules};
  d->pool_ = std::make_unique<RegionPool>(std::move(*tiers), std::move(*topology), make_backing_factory(),
                                          d->placement_.get(), std::move(limits));
  d->migrations_ = std::make_unique<MigrationWorker>(d->placement_.get());
  if (auto ok = d->migrations_->start(); !ok) return tl::unexpected(ok.error());
  auto tiering = TieringService::create(d->config_, *d->pool_, d->placement_.get(), d->move_all_);
  if (!tiering) return tl::unexpected(tiering.error());
  d->tiering_ = std::move(*tiering);
  d->tiering_->add_source(d->client_reports_.get());
  if (!d->config_.kvstore.enabled) {
    d->kv_off_reason_ = "disabled by [kvstore] enabled = false";
  } else {
    auto kv = KvService::create(d->config_.kvstore, *d->pool_);
    if (kv) {
      d->kv_ = std::move(*kv);
    } else if (kv.error().code == ENODEV) {
      // Only the defaults were asked for and this host has nothing for them.
      d->kv_off_reason_ = kv.error().message;
      logger("kvstore")->warn("off: {}", d->kv_off_reason_);
    } else {
      return tl::unexpected(kv.error());
    }
  }
  d->weights_ = std::make_unique<WeightsService>(*d->pool_);
  if (auto ok = d->weights_->start(); !ok) return tl::unexpected(ok.error());
  d->ckpt_ = std::make_unique<CkptService>(*d->pool_, find_restore_program(),
                                           std::chrono::milliseconds(d->config_.ckpt_restore_timeout_ms));
  if (auto ok = d->ckpt_->start(); !ok) return tl::unexpected(ok.error());
  d->backends_ = hal::probe_all_backends();
  for (const auto& b : d->backends_) {
    log->info("backend {}/{}: {}{}{}", b.cls, b.name, hal::backend_state_name(b.state),
              b.detail.empty() ? "" : " — ", b.detail);
  }
  for (const auto& t : d->pool_->tiers()) {
    log->info("tier {} '{}': {} on node {}, capacity {}", t.id, t.name, tier_kind_name(t.kind),
              t.numa_node, format_size(t.capacity));
  }
  // The metrics endpoint is up before the control socket: a client that can
  // connect to the socket can also scrape, with no window between the two.
  if (d->config_.metrics_port != 0) {
    if (auto ok = d->metrics_.start(d->config_.metrics_address, d->config_.metrics_port); !ok) {
      return tl::unexpected(ok.error());
    }
    d->metrics_.publish(d->render_metrics());
    log->info("metrics at http://{}:{}/metrics", d->config_.metrics_address, d->config_.metrics_port);
  }
  if (auto ok = d->setup_socket(); !ok) return tl::unexpected(ok.error());
  d->ckpt_->set_control_socket(d->socket_path_.string());
  d->ckpt_->set_lease_holder([daemon = d.get()](uint64_t session_id, uint64_t region_id) {
    const auto it = daemon->sessions_.find(session_id);
    if (it == daemon->sessions_.end()) return LeaseHolder{};
    LeaseHolder h{it->second->pid, region_id};
    for (const auto& [alias, target] : it->second->region_aliases)
      if (target == region_id) h.id = alias;
    return h;
  });
  // The pod file defaults to the state directory, which exists from here on.
  if (!d->config_.devpool.enabled) {
    d->devpool_off_reason_ = "disabled by [devpool] enabled = false";
  } else {
    // [pod] state = "etcd": the allocator's state is the pod's (docs/devpool.md).
    std::unique_ptr<EtcdPodState> shared;
    if (d->config_.pod.state == PodStateKind::kEtcd) {
      shared = std::make_unique<EtcdPodState>(d->config_.pod, pod_host_name(d->config_.pod),
                                              DevpoolService::limits(d->config_.devpool));
      // Bounded: a daemon whose etcd is away starts all the same.
      if (!shared->wait_connected(std::chrono::milliseconds(2 * d->config_.pod.etcd_timeout_ms))) {
        log->warn("device pool: etcd not reached yet; registrations and attaches are refused until it answers");
      }
    }
    auto devpool = DevpoolService::create(d->config_.devpool, d->state_dir_, std::move(shared));
    if (!devpool) return tl::unexpected(devpool.error());
    d->devpool_ = std::move(*devpool);
    log->info("device pool: pod region {}", d->devpool_->pod_description());
    if (auto warning = d->devpool_->pod_placement_warning(); !warning.empty()) log->warn("device pool: {}", warning);
  }
  // Pod membership last: peers see this daemon once it can serve.
  d->pod_host_ = pod_host_name(d->config_.pod);
  if (d->config_.pod.state == PodStateKind::kEtcd) d->pod_fabric_ = std::make_unique<PodFabric>(d->config_.pod);
  d->pod_ = open_pod_membership(d->config_.pod, d->pod_self());
  if (d->pod_fabric_ && d->pod_fabric_->open()) {
    // Checked at start already (check_config_on_host); read here once.
    auto secret = load_pod_secret(d->config_.pod.secret_file, ::geteuid());
    if (!secret) return tl::unexpected(secret.error());
    if (secret->empty() && !d->config_.pod.address.empty()) {
      log->warn("[pod] secret_file is not set: KV control connections to {} are not authenticated; anyone who "
                "reaches it can pin chunks and learn where they are (docs/pods.md, \"Trust and authentication\")",
                d->config_.pod.address);
    }
    d->pod_kv_ = std::make_unique<PodKv>(
        d->config_.pod, d->pod_host_, *d->pod_fabric_, [pod = d->pod_.get()] { return pod->snapshot().members; },
        d->config_.kvstore.slot_bytes, std::move(*secret));
    if (d->kv_) d->kv_->set_remote(d->pod_kv_.get());
  }
  if (auto ok = d->setup_loop(); !ok) return tl::unexpected(ok.error());
  return d;
}

Daemon::~Daemon() {
  // Leave the pod first: peers stop counting on this host at once.
  if (pod_) pod_->stop();
  // Peers' reads and fetches into the KV views end before the views go.
  pod_kv_.reset();
  pod_fabric_.reset();
  metrics_.stop();
  if (tiering_) tiering_->stop();
  if (migrations_) migrations_->stop();
  sessions_.clear();
  // The store reads and writes the arenas: it goes before the pool.
  kv_.reset();
  if (weights_) weights_->stop();
  weights_.reset();
  if (ckpt_) {
    ckpt_->stop();
    ckpt_->clear();
  }
  ckpt_.reset();
  if (pool_) pool_->clear();
  if (devpool_) devpool_->remove_pod_name();
  if (listen_fd_) ::unlink(socket_path_.c_str());
}

void Daemon::resolve_admin_groups() {
  admin_gids_.clear();
  for (const auto& name : config_.admin_groups) {
    if (const group* g = ::getgrnam(name.c_str())) admin_gids_.push_back(g->gr_gid);
  }
}

Result<void> Daemon::setup_socket() {
  std::error_code ec;
  if (!std::filesystem::exists(state_dir_, ec)) {
    std::filesystem::create_directories(state_dir_, ec);
    if (ec) return fail(ec.value(), "cannot create state dir " + state_dir_.string() + ": " + ec.message());
    ::chmod(state_dir_.c_str(), 0755);
  }
  // One daemon per state dir: the lock outlives crashes (the kernel drops it),
  // so a stale socket of a dead daemon can be replaced safely.
  const auto lock_path = state_dir_ / "cxlpoold.lock";
  lock_fd_.reset(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!lock_fd_) return fail_errno("open " + lock_path.string());
  if (::flock(lock_fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    return fail(EBUSY, "another cxlpoold is running with state dir " + state_dir_.string());
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_.get(), 0) != 0 || ::pwrite(lock_fd_.get(), pid.data(), pid.size(), 0) < 0) {
    return fail_errno("write pid to " + lock_path.string());
  }

  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path_.string().size() >= sizeof addr.sun_path) {
    return fail(ENAMETOOLONG, "socket path too long: " + socket_path_.string());
  }
  std::strcpy(addr.sun_path, socket_path_.c_str());
  ::unlink(socket_path_.c_str());
  listen_fd_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listen_fd_) return fail_errno("socket");
  // The socket is created with the final mode so no client can slip in
  // through a wider default between bind and chmod.
  const mode_t old_mask = ::umask(0777 & ~config_.socket_mode);
  const int bound = ::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old_mask);
  if (bound != 0) return fail_errno("bind " + socket_path_.string());
  ::chmod(socket_path_.c_str(), config_.socket_mode);
  if (const group* g = ::getgrnam(config_.socket_group.c_str())) {
    if (::chown(socket_path_.c_str(), static_cast<uid_t>(-1), g->gr_gid) != 0) {
      logger("control")->warn("cannot give {} to group {}: {}", socket_path_.string(), config_.socket_group,
                              std::strerror(errno));
    }
  }
  if (::listen(listen_fd_.get(), 128) != 0) return fail_errno("listen");
  return {};
}

Result<void> Daemon::setup_loop() {
  epoll_fd_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd_) return fail_errno("epoll_create1");
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  if (::sigprocmask(SIG_BLOCK, &mask, nullptr) != 0) return fail_errno("sigprocmask");
  ::signal(SIGPIPE, SIG_IGN);
  signal_fd_.reset(::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signal_fd_) return fail_errno("signalfd");
  auto tick = make_timer(1000000000ull);
  if (!tick) return tl::unexpected(tick.error());
  tick_fd_ = std::move(*tick);
  for (auto [fd, tag] : {std::pair{listen_fd_.get(), kTagListen}, {signal_fd_.get(), kTagSignal},
                         {tick_fd_.get(), kTagTick}, {migrations_->event_fd(), kTagMigration},
                         {tiering_->timer_fd(), kTagTiering}, {tiering_->mover_fd(), kTagTieringMoves},
                         {weights_->event_fd(), kTagWeights}, {ckpt_->event_fd(), kTagCkpt}}) {
    if (fd < 0) continue;  // no page mover without a placement backend
    if (auto ok = epoll_add(epoll_fd_.get(), fd, tag); !ok) return ok;
  }
  if (devpool_) {
    auto timer = make_timer(devpool_->telemetry_ns());
    if (!timer) return tl::unexpected(timer.error());
    devpool_timer_fd_ = std::move(*timer);
    if (auto ok = epoll_add(epoll_fd_.get(), devpool_timer_fd_.get(), kTagDevpool); !ok) return ok;
  }
  if (pod_kv_) {
    if (auto ok = epoll_add(epoll_fd_.get(), pod_kv_->event_fd(), kTagPodKv); !ok) return ok;
  }
  if (const uint64_t usec = watchdog_usec(); usec != 0) {
    auto wd = make_timer(usec * 1000 / config_.watchdog_divisor);
    if (!wd) return tl::unexpected(wd.error());
    watchdog_fd_ = std::move(*wd);
    if (auto ok = epoll_add(epoll_fd_.get(), watchdog_fd_.get(), kTagWatchdog); !ok) return ok;
  }
  return {};
}

std::string Daemon::status_line() const {
  return std::to_string(sessions_.size()) + " clients, " + std::to_string(pool_->regions().size()) +
         " regions, " + format_size(pool_->bytes_allocated()) + " allocated";
}

int Daemon::run() {
  auto log = logger("daemon");
  notice(*log, "listening on {} (state dir {}, config: {})", socket_path_.string(), state_dir_.string(),
            config_.source);
  notify_ready(status_line());
  epoll_event events[64];
  // Clients wait for each reply; a sleeping loop costs each of them a
  // scheduler wake-up (tens of microseconds in a VM), so after a request the
  // loop polls without sleeping for busy_poll_us.
  uint64_t last_request_ns = 0;
  while (!stopping_) {
    // KV rings are read straight from shared memory: while the loop spins,
    // a request costs no system call on either side.
    const bool served = poll_kv();
    if (served) last_request_ns = monotonic_ns();
    const uint64_t spin_ns = uint64_t{config_.busy_poll_us} * 1000;
    bool spinning = (spin_ns != 0 && monotonic_ns() - last_request_ns < spin_ns) ||
                    (kv_ && (kv_->must_poll() || (kv_commit_fd_ < 0 && kv_->commits_pending())));
    int timeout_ms = -1;
    // Before sleeping, clients are asked to ring their KV doorbells; a
    // request that slipped in meanwhile keeps the loop awake.
    const bool armed = !spinning && kv_ != nullptr;
    if (armed) {
      if (!kv_->arm()) spinning = true;
      // SSD reads end with an eventfd wake-up; the timeout only bounds the
      // wait should a queued read have found the device full.
      if (kv_->io_pending()) timeout_ms = kKvIoRecheckMs;
    }
    const int n = ::epoll_wait(epoll_fd_.get(), events, 64, spinning ? 0 : timeout_ms);
    if (armed) kv_->disarm();
    if (n < 0) {
      if (errno == EINTR) continue;
      const ScopedLogFields fields({.error = errno});
      log->error("epoll_wait: {}", std::strerror(errno));
      return 1;
    }
    if (n == 0) {
      // Nothing on the descriptors: watch the KV rings from memory for a
      // moment before the next look at them, then let a client that shares
      // this core run -- at once when its completions were just published.
      if (spinning && !served && spin_kv_rings()) last_request_ns = monotonic_ns();
      ::sched_yield();
      continue;
    }
    for (int i = 0; i < n && !stopping_; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag & kKvDoorbellBit) {
        last_request_ns = monotonic_ns();
        if (kv_) kv_->on_doorbell(tag & ~kKvDoorbellBit);
        continue;
      }
      if (tag & kSessionBit) {
        last_request_ns = monotonic_ns();
        auto it = sessions_.find(tag & ~kSessionBit);
        if (it == sessions_.end()) continue;
        if (events[i].events & EPOLLIN) {
          serve(*it->second);
        } else if (events[i].events & (EPOLLHUP | EPOLLERR)) {
          close_session(it->first);
        }
        continue;
      }
      switch (tag) {
        case kTagListen: accept_clients(); break;
        case kTagSignal: handle_signal(); break;
        case kTagTick: tick(); break;
        case kTagMigration: finish_migrations(); break;
        case kTagWeights: finish_weight_loads(); break;
        case kTagCkpt: finish_ckpt_tasks(); break;
        case kTagPodKv:
          last_request_ns = monotonic_ns();
          if (pod_kv_) pod_kv_->on_event(kv_.get());
          break;
        case kTagDevpool: {
          uint64_t expirations = 0;
          (void)!::read(devpool_timer_fd_.get(), &expirations, sizeof expirations);
          if (devpool_) devpool_->check_leases(monotonic_ns());
          break;
        }
        case kTagTiering: tiering_->on_timer(); break;
        case kTagTieringMoves: tiering_->on_moves_done(); break;
        case kTagKvIo:
          last_request_ns = monotonic_ns();
          if (kv_) kv_->on_completion_fd();
          break;
        case kTagKvCommits:
          // Copies finished: the loop's next poll finishes their commits.
          last_request_ns = monotonic_ns();
          if (kv_) kv_->on_commit_fd();
          break;
        case kTagWatchdog: {
          uint64_t expirations = 0;
          (void)!::read(watchdog_fd_.get(), &expirations, sizeof expirations);
          notify_watchdog();
          break;
        }
        default: break;
      }
    }
  }
  notify_stopping();
  // A migration in progress completes; queued ones are dropped.
  migrations_->stop();
  finish_migrations();
  // A weights copy under way is cancelled; its waiters get the error before
  // the sessions close, and no copy runs once the pool goes.
  weights_->stop();
  finish_weight_loads();
  // A capture or restore under way finishes; queued ones are cancelled.
  ckpt_->stop();
  finish_ckpt_tasks();
  tiering_->stop();
  notice(*log, "shutting down: releasing {} regions of {} clients", pool_->regions().size(), sessions_.size());
  while (!sessions_.empty()) close_session(sessions_.begin()->first);
  // Seals the SSD log's open region: what was committed survives the restart.
  if (kv_) {
    if (kv_io_fd_ >= 0) ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, kv_io_fd_, nullptr);
    kv_io_fd_ = -1;
    if (kv_commit_fd_ >= 0) ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, kv_commit_fd_, nullptr);
    kv_commit_fd_ = -1;
    kv_->shutdown();
  }
  pool_->clear();
  metrics_.stop();
  ::unlink(socket_path_.c_str());
  listen_fd_.reset();
  notice(*log, "stopped");
  return 0;
}

bool Daemon::spin_kv_rings() {
  if (!kv_ || !kv_->started()) return false;
  for (int i = 0; i < kKvSpinPolls; ++i) {
    if (kv_->poll() != 0) return true;
    cpu_relax();
  }
  return false;
}

void Daemon::handle_signal() {
  signalfd_siginfo info{};
  while (::read(signal_fd_.get(), &info, sizeof info) == sizeof info) {
    if (info.ssi_signo == SIGHUP) {
      reload();
    } else {
      logger("daemon")->info("received {}", strsignal(static_cast<int>(info.ssi_signo)));
      stopping_ = true;
    }
  }
}

void Daemon::reload() {
  auto log = logger("config");
  ++counters_.reloads;
  if (!config_path_) {
    log->info("SIGHUP: running on the embedded default; nothing to reload");
    return;
  }
  notify_reloading();
  auto next = load_config_file(*config_path_);
  if (!next) {
    const ScopedLogFields fields({.error = next.error().code});
    log->error("reload failed, keeping the running configuration: {}", next.error().message);
    notify_ready(status_line());
    return;
  }
  for (const auto& key : changes_needing_restart(config_, *next)) {
    log->warn("reload: '{}' changed but takes effect only after a restart", key);
  }
  config_.log_level = next->log_level;
  config_.max_clients = next->max_clients;
  config_.max_clients_per_uid = next->max_clients_per_uid;
  config_.admin_reserved_clients = next->admin_reserved_clients;
  config_.gpu_host_bytes_per_uid = next->gpu_host_bytes_per_uid;
  config_.max_regions_per_client = next->max_regions_per_client;
  config_.max_region_size = next->max_region_size;
  config_.busy_poll_us = next->busy_poll_us;
  config_.quota_default_bytes = next->quota_default_bytes;
  config_.quota_rules = next->quota_rules;
  config_.admin_groups = next->admin_groups;
  set_log_level(config_.log_level);
  resolve_admin_groups();
  pool_->set_limits({config_.max_region_size, config_.quota_default_bytes, config_.quota_rules});
  config_.tiering.enabled = next->tiering.enabled;
  config_.tiering.epoch_ms = next->tiering.epoch_ms;
  config_.tiering.knobs = next->tiering.knobs;
  tiering_->reload(next->tiering);
  notice(*log, "configuration reloaded from {}", config_path_->string());
  notify_ready(status_line());
}

void Daemon::tick() {
  uint64_t expirations = 0;
  (void)!::read(tick_fd_.get(), &expirations, sizeof expirations);
  pool_->refresh_free_memory(sysfs_);
  // Empty the clients' access rings even when no epoch is due, so they do
  // not fill up (and drop reports) between epochs.
  client_reports_->drain();
  if (kv_) {
    kv_->expire_leases();
    kv_->report_ssd_errors(monotonic_ns());
  }
  if (pod_) pod_->update_self(pod_self());
  notify_status(status_line());
  if (metrics_.running()) metrics_.publish(render_metrics());
}

void Daemon::accept_clients() {
  auto log = logger("control");
  for (;;) {
    UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno != EAGAIN && errno != EINTR) {
        const ScopedLogFields fields({.error = errno});
        log->warn("accept: {}", std::strerror(errno));
      }
      return;
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      log->warn("SO_PEERCRED: {}", std::strerror(errno));
      continue;
    }
    std::vector<gid_t> peer_groups;
    gid_t groups[256];
    socklen_t glen = sizeof groups;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0) {
      peer_groups.assign(groups, groups + glen / sizeof(gid_t));
    }
    const bool admin = is_admin(cred.uid, cred.gid, peer_groups);
    if (auto refusal = connection_refusal(cred.uid, admin)) {
      ++counters_.clients_refused;
      log->debug("refused a connection of pid {} uid {}: {}", cred.pid, cred.uid, *refusal);
      (void)proto::send_message(fd.get(), 0, proto::ErrorReply{EUSERS, *refusal});
      continue;
    }
    auto session = std::make_unique<Session>();
    session->id = next_session_id_++;
    session->pid = cred.pid;
    session->who.client_id = session->id;
    session->who.uid = cred.uid;
    session->who.gid = cred.gid;
    session->who.groups = std::move(peer_groups);
    session->who.admin = admin;
    session->connected_ns = monotonic_ns();
    session->fd = std::move(fd);
    if (auto ok = epoll_add(epoll_fd_.get(), session->fd.get(), kSessionBit | session->id); !ok) {
      log->warn("{}", ok.error().message);
      continue;
    }
    ++counters_.clients_accepted;
    ++clients_per_uid_[cred.uid];
    const ScopedLogFields fields({.client = session->id});
    log->debug("client {} connected: pid {} uid {} gid {}{}", session->id, cred.pid, cred.uid, cred.gid,
               session->who.admin ? " (admin)" : "");
    sessions_[session->id] = std::move(session);
  }
}

std::optional<std::string> Daemon::connection_refusal(uid_t uid, bool admin) {
  const size_t open = sessions_.size();
  if (open >= config_.max_clients) {
    return "too many clients (max_clients=" + std::to_string(config_.max_clients) + ")";
  }
  // Admins are bounded by max_clients only: the reserve and the per-uid
  // limit exist so that no other user can lock them out.
  if (admin) return std::nullopt;
  const uint32_t reserved = std::min(config_.admin_reserved_clients, config_.max_clients - 1);
  if (open >= config_.max_clients - reserved) {
    ++counters_.clients_refused_reserved;
    return "too many clients: the last " + std::to_string(reserved) + " of max_clients=" +
           std::to_string(config_.max_clients) + " are kept for admins (admin_reserved_clients)";
  }
  if (config_.max_clients_per_uid != 0) {
    auto it = clients_per_uid_.find(uid);
    if (it != clients_per_uid_.end() && it->second >= config_.max_clients_per_uid) {
      ++counters_.clients_refused_per_uid;
      return "too many connections of uid " + std::to_string(uid) +
             " (max_clients_per_uid=" + std::to_string(config_.max_clients_per_uid) + ")";
    }
  }
  return std::nullopt;
}

bool Daemon::is_admin(uid_t uid, gid_t gid, const std::vector<gid_t>& groups) const {
  // The user the daemon runs as administers it: with the embedded default an
  // unprivileged developer runs and manages their own daemon.
  if (uid == 0 || uid == ::geteuid()) return true;
  for (gid_t admin : admin_gids_) {
    if (gid == admin || std::find(groups.begin(), groups.end(), admin) != groups.end()) return true;
  }
  return false;
}

void Daemon::close_session(uint64_t id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  Session& session = *it->second;
  // The ring's last reports count while the session still holds its regions.
  if (session.access_ring) {
    client_reports_->remove_ring(id);
    session.access_ring->source = nullptr;
  }
  // Every handle goes back: leased regions die with their client, named ones
  // lose this client's references.
  for (const auto& [region_id, count] : session.handles) {
    for (uint32_t i = 0; i < count; ++i) pool_->release_handle(region_id);
  }
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, session.fd.get(), nullptr);
  if (session.kv_doorbell_fd >= 0) {
    // The client holds the same eventfd: closing ours would not take it out
    // of epoll.
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, session.kv_doorbell_fd, nullptr);
    session.kv_doorbell_fd = -1;
  }
  // Its leases end and its reservations are aborted.
  if (kv_) kv_->close(id);
  if (weights_) weights_->forget_session(id);
  gpu_host_.close_session(id);
  // Its devices fail over at once; its attachments end.
  if (devpool_) devpool_->close_session(id, monotonic_ns());
  const ScopedLogFields fields({.client = id});
  logger("control")->debug("client {} (pid {}) disconnected, {} handles released", id, session.pid,
                           session.handle_count);
  ++counters_.clients_closed;
  if (auto per_uid = clients_per_uid_.find(session.who.uid);
      per_uid != clients_per_uid_.end() && --per_uid->second == 0) {
    clients_per_uid_.erase(per_uid);
  }
  sessions_.erase(it);
}

void Daemon::serve(Session& session) {
  const uint64_t id = session.id;
  const ScopedLogFields fields({.client = id});
  // Bounded per wake-up so one busy client cannot starve the others.
  for (int i = 0; i < 16; ++i) {
    auto received = proto::recv_message(session.fd.get());
    if (!received) {
      const int code = received.error().code;
      if (code == EAGAIN || code == EWOULDBLOCK) return;
      if (code != ECONNRESET) {
        ++counters_.malformed_messages;
        const ScopedLogFields error_field({.error = code});
        logger("control")->warn("client {} (pid {}): {}; closing", id, session.pid, received.error().message);
        const int reply_code = (code == EMSGSIZE || code == EPROTONOSUPPORT) ? code : EPROTO;
        (void)proto::send_message(session.fd.get(), 0,
                                  proto::ErrorReply{reply_code, received.error().message.substr(
                                                                    0, proto::kMaxErrorMessageLength)});
      }
      close_session(id);
      return;
    }
    const auto& envelope = received->envelope;
    const uint64_t received_ns = monotonic_ns();
    ++counters_.requests;
    const std::string_view type = proto::message_type_name(static_cast<proto::MsgType>(envelope.header.type));
    ++counters_.by_type[std::string(type)];
    // Recorded when this request's iteration ends, however it ends.
    struct RecordDuration {
      DurationHistogram& histogram;
      uint64_t since;
      ~RecordDuration() { histogram.record(monotonic_ns() - since); }
    } record_duration{request_duration(type), received_ns};
    // Only WeightsLoad, CkptCreate and CkptRestore take descriptors from a client;
    // any others are closed when this iteration ends.
    current_request_id_ = envelope.header.request_id;
    request_fds_ = std::move(received->fds);
    auto reply = dispatch(session, envelope.message);
    request_fds_.clear();
    if (!reply) {
      ++counters_.request_errors;
      const auto& err = reply.error();
      if (err.code == EPERM) ++counters_.admin_denied;
      // The wire carries errno values 1..4095; anything else is an internal slip.
      const int code = err.code > 0 && err.code < 4096 ? err.code : EIO;
      proto::ErrorReply error{code, err.message.substr(0, proto::kMaxErrorMessageLength)};
      auto sent = proto::send_message(session.fd.get(), envelope.header.request_id, error, {},
                                      session.version ? session.version : proto::kVersionMin);
      // A client that breaks protocol rules is disconnected after the reply.
      if (!sent || err.code == EPROTO || err.code == EPROTONOSUPPORT) {
        close_session(id);
        return;
      }
      continue;
    }
    if (reply->deferred) continue;
    std::vector<int> fds;
    if (reply->fd) fds.push_back(reply->fd.get());
    if (reply->borrowed_fd >= 0) fds.push_back(reply->borrowed_fd);
    for (const auto& fd : reply->more_fds) fds.push_back(fd.get());
    auto sent = proto::send_message(session.fd.get(), envelope.header.request_id, reply->message, fds,
                                    session.version);
    if (!sent) {
      // A client that does not read its replies is dropped, never waited on.
      const ScopedLogFields error_field({.error = sent.error().code});
      logger("control")->warn("client {}: cannot send reply: {}; closing", id, sent.error().message);
      close_session(id);
      return;
    }
  }
}

}  // namespace cxlpool::daemon

namespace cxlpool::daemon {

void Daemon::finish_weight_loads() {
  for (auto& done : weights_->finish_loads()) {
    auto it = sessions_.find(done.waiter.session_id);
    // A client that disconnected meanwhile: the model stays loaded for the others.
    if (it == sessions_.end()) continue;
    if (done.reply) {
      send_deferred(*it->second, done.waiter.request_id, proto::Message{*done.reply});
    } else {
      send_deferred(*it->second, done.waiter.request_id, tl::unexpected(done.reply.error()));
    }
  }
}

void Daemon::send_deferred(Session& session, uint32_t request_id, const Result<proto::Message>& reply) {
  Result<void> sent;
  if (reply) {
    sent = proto::send_message(session.fd.get(), request_id, *reply, {}, session.version);
  } else {
    const Error& e = reply.error();
    const int code = e.code > 0 && e.code < 4096 ? e.code : EIO;
    ++counters_.request_errors;
    sent = proto::send_message(session.fd.get(), request_id,
                               proto::ErrorReply{code, e.message.substr(0, proto::kMaxErrorMessageLength)}, {},
                               session.version);
  }
  if (!sent) close_session(session.id);
}

void Daemon::finish_migrations() {
  auto log = logger("pool");
  for (auto& task : migrations_->take_finished()) {
    const ScopedLogFields fields({.client = task.session_id, .region = task.job.region_id,
                                  .error = task.moved ? 0 : task.moved.error().code});
    const auto reply = pool_->finish_migration(task.job, task.moved);
    migration_durations_.record(reply.elapsed_ns);
    auto it = sessions_.find(task.session_id);
    if (!task.moved) {
      log->error("migration of region {} to tier {} failed: {}", task.job.region_id, task.job.to_tier,
                 task.moved.error().message);
      if (it != sessions_.end()) {
        (void)proto::send_message(it->second->fd.get(), task.request_id,
                                  proto::ErrorReply{task.moved.error().code, task.moved.error().message},
                                  {}, it->second->version);
      }
      continue;
    }
    log->info("migrated region {} tier {} -> {}: {} pages moved, {} already there, {} absent, {} failed in {} us",
              reply.region_id, reply.from_tier, reply.to_tier, reply.pages_moved, reply.pages_already,
              reply.pages_absent, reply.pages_failed, reply.elapsed_ns / 1000);
    if (it != sessions_.end()) {
      auto sent = proto::send_message(it->second->fd.get(), task.request_id, reply, {}, it->second->version);
      if (!sent) close_session(task.session_id);
    }
  }
}

}  // namespace cxlpool::daemon
