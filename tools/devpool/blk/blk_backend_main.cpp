// SPDX-License-Identifier: Apache-2.0
// cxlpool-devpool-blk: the storage engine's backend. Directly attached, it
// formats a link in --link-file, opens the SSD (a block device or a file)
// with io_uring and O_DIRECT through lib/hal's registry, and serves the
// frontend's commands until SIGINT/SIGTERM; the frontend (libcxlpool's
// cxlpool_blk_*, cxlpool-io's ioengine=devpool) opens the same file once
// "ready" is printed. With --socket it registers the SSD with the pod
// allocator instead and serves the link slots the pod table gives it
// (blk_pod_serve.hpp).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <string>

#include "blk_pod_serve.hpp"
#include "cxlpool/devpool/blk_backend.hpp"
#include "cxlpool/devpool/link_file.hpp"
#include "cxlpool/hal/backend_registry.hpp"

namespace {

using namespace cxlpool;

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

void install_signals() {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

int die(const Error& e, const std::string& what) {
  std::fprintf(stderr, "cxlpool-devpool-blk: %s: %s\n", what.c_str(), e.message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cxlpool-devpool-blk: serves an SSD to a storage frontend over a link in shared memory"};
  app.set_version_flag("--version", "cxlpool-devpool-blk " CXLPOOL_VERSION_STRING);
  std::string link_path, ssd, engine = "uring";
  std::uint64_t ssd_size = 0, buffer_mib = 64;
  std::uint32_t slots = 256, queue_depth = 64;
  bool buffered = false, noncoherent = false, read_only = false, no_doorbell = false;
  std::string socket, host, name;
  std::uint64_t nominal_iops = 500000, nominal_bandwidth = 2000ull * 1000 * 1000;
  auto* link_opt = app.add_option("--link-file", link_path, "shared file to format the link in (tmpfs, /dev/shm, hugetlbfs)");
  auto* socket_opt = app.add_option("--socket", socket, "register with the pod allocator of the daemon on this socket");
  link_opt->excludes(socket_opt);
  app.add_option("--host", host, "with --socket: this backend's host in the pod")->needs(socket_opt);
  app.add_option("--name", name, "with --socket: the device's name (default: the file name of --ssd); the same "
                                 "name on two hosts is one device reached from both")->needs(socket_opt);
  app.add_option("--nominal-iops", nominal_iops, "with --socket: the IOPS the allocator plans with")->capture_default_str();
  app.add_option("--nominal-bandwidth", nominal_bandwidth, "with --socket: the bytes/s the allocator plans with")->capture_default_str();
  app.add_option("--ssd", ssd, "block device or file to serve")->required();
  app.add_option("--ssd-size", ssd_size, "create or extend a regular file to this many bytes");
  app.add_option("--engine", engine, "BlockEngine backend: uring, posix or auto")->capture_default_str();
  app.add_flag("--buffered", buffered, "without O_DIRECT (file systems that refuse it)");
  app.add_option("--slots", slots, "commands the request channel holds (power of two)")->capture_default_str();
  app.add_option("--buffer-mib", buffer_mib, "frontend buffer area in MiB")->capture_default_str();
  app.add_option("--queue-depth", queue_depth, "commands in flight on the device")->capture_default_str();
  app.add_flag("--noncoherent", noncoherent, "flush and invalidate lines (memory shared without coherence)");
  app.add_flag("--read-only", read_only, "refuse writes (EROFS)");
  app.add_flag("--no-doorbell", no_doorbell, "never wake a sleeping frontend (it polls); the doorbell is used on coherent links only");
  CLI11_PARSE(app, argc, argv);
  if (link_path.empty() && socket_opt->count() == 0) {
    std::fprintf(stderr, "cxlpool-devpool-blk: --link-file or --socket is required\n");
    return 1;
  }

  hal::BlockOpenOptions o;
  o.direct = !buffered;
  o.read_only = read_only;
  o.create = ssd_size != 0;
  o.truncate_to = ssd_size;
  o.queue_depth = queue_depth;
  // The serve loop polls; nothing waits on an eventfd. Its one thread
  // enters the ring for completions (as fio's io_uring engine does:
  // COOP_TASKRUN, SINGLE_ISSUER | DEFER_TASKRUN), so completions are not
  // pushed into it with an interrupt each.
  o.completion_eventfd = false;
  o.coop_taskrun = true;
  o.single_thread = true;
  auto device = hal::open_block_device(engine, ssd, o);
  if (!device) return die(device.error(), "open " + ssd);
  if (auto bound = (*device)->bind_to_thread(); !bound) return die(bound.error(), "open " + ssd);

  devpool::blk::BlkBackendOptions options;
  options.queue_depth = queue_depth;
  options.read_only = read_only;
  options.doorbell = !no_doorbell && !noncoherent;
  install_signals();
  if (socket_opt->count() != 0) {
    if (host.empty()) {
      std::fprintf(stderr, "cxlpool-devpool-blk: --socket needs --host\n");
      return 1;
    }
    devpool::blk::PodServeConfig pod;
    pod.socket = socket;
    pod.host = host;
    pod.name = name.empty() ? ssd.substr(ssd.find_last_of('/') + 1) : name;
    pod.ssd = ssd;
    pod.engine = engine;
    pod.open = o;
    pod.open.create = false;  // created above when asked, sized once
    pod.open.truncate_to = 0;
    pod.backend = options;
    pod.nominal_iops = nominal_iops;
    pod.nominal_bandwidth = nominal_bandwidth;
    device->reset();
    return devpool::blk::serve_pod(pod, g_stop);
  }

  const auto coherence = noncoherent ? devpool::Coherence::kNonCoherent : devpool::Coherence::kCoherent;
  auto link = devpool::LinkFile::create(link_path, devpool::blk::blk_link_geometry(slots, buffer_mib << 20, coherence));
  if (!link) return die(link.error(), "link " + link_path);

  bool announced = false;
  devpool::blk::BlkBackendStats total;
  Result<void> served;
  // One frontend at a time: when one has used the link and left (its lock
  // is free), the link is formatted afresh for the next.
  while (!g_stop.load()) {
    auto backend = devpool::blk::make_blk_backend(link->view(), **device, options);
    if (!backend) return die(backend.error(), "attach " + link_path);
    if (!announced) {
      const devpool::blk::DeviceInfo& info = (*backend)->device_info();
      std::printf("cxlpool-devpool-blk: serving %s (%llu bytes, block %u, %s%s, queue depth %u, buffers %s) on %s\nready\n",
                  ssd.c_str(), static_cast<unsigned long long>(info.capacity), info.block_size, (*device)->backend_name(),
                  (*device)->direct() ? " O_DIRECT" : " buffered", info.queue_depth,
                  (*backend)->stats().buffers_registered ? "registered" : "not registered", link_path.c_str());
      std::fflush(stdout);
      announced = true;
    }
    bool recycle = false;
    auto frontend_left = [&] {
      if ((*backend)->stats().commands == 0 || !link->try_lock_frontends()) return false;
      recycle = true;
      return true;
    };
    served = (*backend)->run(g_stop, frontend_left);
    devpool::blk::add_stats(total, (*backend)->stats());
    backend->reset();
    if (!served) break;
    if (recycle) {
      auto formatted = link->reformat();
      link->unlock_frontends();
      if (!formatted) return die(formatted.error(), "format " + link_path);
    }
  }
  const devpool::blk::BlkBackendStats& s = total;
  std::fprintf(stderr,
               "cxlpool-devpool-blk: %llu commands: %llu reads (%llu bytes), %llu writes (%llu bytes), %llu flushes, "
               "%llu rejected, %llu device errors, %llu completion batches\n",
               static_cast<unsigned long long>(s.commands), static_cast<unsigned long long>(s.reads),
               static_cast<unsigned long long>(s.bytes_read), static_cast<unsigned long long>(s.writes),
               static_cast<unsigned long long>(s.bytes_written), static_cast<unsigned long long>(s.flushes),
               static_cast<unsigned long long>(s.rejected), static_cast<unsigned long long>(s.device_errors),
               static_cast<unsigned long long>(s.completion_batches));
  if (!served) return die(served.error(), "serve");
  return 0;
}
