// SPDX-License-Identifier: Apache-2.0
// cxlpool-devpool: the device pooling engines, through the pod allocator
// (the daemon's devpool service hands out links in its pod file) or
// directly attached (one link per file, named by both sides).
//
//   cxlpool-devpool backend  --socket S --host H --nic IF [--netport packet|afxdp|dpdk|auto]
//   cxlpool-devpool frontend --socket S --host H --tap NAME --mac MAC [--prefer IF --prefer-host H] [--mtu 1500]
//
//   cxlpool-devpool format   --link-file F [--non-coherent]
//   cxlpool-devpool backend  --link-file F [--link-file F2 ...] --nic IF [--netport packet|afxdp|dpdk|auto]
//   cxlpool-devpool frontend --link-file F --tap NAME --mac MAC [--mtu 1500]
//
// Every engine takes --netns NAME (run in /run/netns/NAME, as `ip netns
// exec` would), --ready-file PATH (created once the engine serves), and
// --spin-us / --max-sleep-us (the idle pacing). A link file that is missing
// or empty is created and formatted by whichever engine opens it first.
// SIGINT/SIGTERM stop an engine; it prints its counters on stderr.
//
// Exit codes: 0 stopped, 1 failure, 2 usage error.
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/backend_registry.hpp"
#include "link_file.hpp"
#include "net_engines.hpp"
#include "pod_links.hpp"
#include "tap_device.hpp"

namespace {

using namespace cxlpool;
using namespace cxlpool::devpool_tool;

// The process's exit status.
enum Exit : int { kExitOk = 0, kExitFailed = 1, kExitUsage = 2 };

int failure(const std::string& what, const Error& error) {
  std::fprintf(stderr, "cxlpool-devpool: %s: %s\n", what.c_str(), error.message.c_str());
  return kExitFailed;
}

struct CommonArgs {
  std::string netns;
  std::string ready_file;
  bool non_coherent = false;
  unsigned spin_us = 200;
  unsigned max_sleep_us = 1000;

  void add_to(CLI::App* app) {
    app->add_option("--netns", netns, "network namespace to run in (/run/netns/NAME)");
    app->add_option("--ready-file", ready_file, "file to create once the engine serves");
    app->add_flag("--non-coherent", non_coherent, "format new links for non-coherent shared memory");
    app->add_option("--spin-us", spin_us, "poll this long after the last work before sleeping");
    app->add_option("--max-sleep-us", max_sleep_us, "longest sleep between polls when idle");
  }
  devpool::LinkGeometry geometry() const {
    return default_net_link_geometry(non_coherent ? devpool::Coherence::kNonCoherent : devpool::Coherence::kCoherent);
  }
  EngineTiming timing() const {
    EngineTiming t;
    t.spin = std::chrono::microseconds(spin_us);
    t.max_sleep = std::chrono::microseconds(std::max(max_sleep_us, 1u));
    t.first_sleep = std::min(t.first_sleep, t.max_sleep);
    return t;
  }
};

Result<void> enter_netns(const std::string& name) {
  if (name.empty()) return {};
  const std::string path = "/run/netns/" + name;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail_errno("open " + path);
  if (::setns(fd.get(), CLONE_NEWNET) != 0) return fail_errno("setns " + path);
  return {};
}

Result<void> prepare(const CommonArgs& args) {
  // Short sleeps are what keeps an idle engine's latency low: ask the kernel
  // not to stretch them (the default slack is 50 µs).
  ::prctl(PR_SET_TIMERSLACK, 1000UL);
  install_stop_handlers();
  return enter_netns(args.netns);
}

Result<void> signal_ready(const std::string& path) {
  if (path.empty()) return {};
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return fail_errno("create " + path);
  return {};
}

// Where an engine's links come from: link files, or the pod daemon.
struct PodArgs {
  std::string socket;
  std::string host;
  std::string prefer, prefer_host;  // frontend: the device to ask for

  bool pooled() const { return !socket.empty(); }
};

void print_backend_counters(const BackendCounters& c) {
  std::fprintf(stderr,
               "cxlpool-devpool: backend stopped: tx %llu rx %llu copied %llu unknown-destination %llu "
               "no-buffer %llu truncated %llu\n",
               static_cast<unsigned long long>(c.tx_frames), static_cast<unsigned long long>(c.rx_frames),
               static_cast<unsigned long long>(c.rx_copied), static_cast<unsigned long long>(c.rx_unknown),
               static_cast<unsigned long long>(c.rx_no_buffer), static_cast<unsigned long long>(c.rx_truncated));
}

int run_pod_backend(const CommonArgs& common, const PodArgs& pod, const std::string& nic, hal::NetPort& port) {
  auto links = PodBackendLinks::register_nic({pod.socket, pod.host, nic}, port);
  if (!links) return failure("pod " + pod.socket, links.error());
  if (auto ok = signal_ready(common.ready_file); !ok) return failure("backend", ok.error());
  auto counters = run_net_backend((*links)->coherence(), port, common.timing(), **links);
  if (!counters) return failure("backend", counters.error());
  print_backend_counters(*counters);
  return kExitOk;
}

int run_backend(const CommonArgs& common, const PodArgs& pod, const std::vector<std::string>& link_files,
                const std::string& nic, const std::string& netport, bool promiscuous) {
  if (pod.pooled() == !link_files.empty()) {
    return failure("backend", Error{EINVAL, "give either --socket (the pod) or --link-file"});
  }
  if (auto ok = prepare(common); !ok) return failure("backend", ok.error());
  std::vector<MappedLink> links;
  for (const std::string& path : link_files) {
    auto link = open_link_file(path, common.geometry());
    if (!link) return failure("link", link.error());
    links.push_back(std::move(*link));
  }
  hal::NetPortOptions options;
  options.promiscuous = promiscuous;
  hal::BackendSkips skipped;
  auto port = hal::open_net_port(netport, nic, options, &skipped);
  if (!port) return failure("NIC " + nic, port.error());
  std::fprintf(stderr, "cxlpool-devpool: backend on %s (NetPort %s, MAC %s, MTU %u) serving %s\n", nic.c_str(),
               (*port)->backend_name(), hal::format_mac((*port)->mac()).c_str(), (*port)->mtu(),
               pod.pooled() ? "the pod's links" : (std::to_string(links.size()) + " link(s)").c_str());
  if (pod.pooled()) return run_pod_backend(common, pod, nic, **port);
  if (auto ok = signal_ready(common.ready_file); !ok) return failure("backend", ok.error());
  auto counters = run_net_backend(links, **port, common.timing());
  if (!counters) return failure("backend", counters.error());
  print_backend_counters(*counters);
  return kExitOk;
}

int run_frontend(const CommonArgs& common, const PodArgs& pod, const std::string& link_file,
                 const std::string& tap_name, const std::string& mac_text, unsigned mtu) {
  if (pod.pooled() == !link_file.empty()) {
    return failure("frontend", Error{EINVAL, "give either --socket (the pod) or --link-file"});
  }
  auto mac = hal::parse_mac(mac_text);
  if (!mac) return failure("--mac", mac.error());
  if (mac->is_multicast() || mac->is_zero()) {
    return failure("--mac", Error{EINVAL, mac_text + " is not a unicast address"});
  }
  // A frame must fit one link buffer: the MTU plus an Ethernet header and a VLAN tag.
  if (mtu < 68 || mtu + 18 > devpool::net::kNetBufferBytes) {
    return failure("--mtu", Error{EINVAL, "must be 68.." + std::to_string(devpool::net::kNetBufferBytes - 18)});
  }
  if (auto ok = prepare(common); !ok) return failure("frontend", ok.error());
  std::unique_ptr<PodFrontendLegs> legs;
  MappedLink link;
  if (pod.pooled()) {
    auto attached = PodFrontendLegs::attach({pod.socket, pod.host, pod.prefer, pod.prefer_host});
    if (!attached) return failure("pod " + pod.socket, attached.error());
    legs = std::move(*attached);
  } else {
    auto opened = open_link_file(link_file, common.geometry());
    if (!opened) return failure("link", opened.error());
    link = std::move(*opened);
  }
  auto tap = TapDevice::create(tap_name, *mac, mtu);
  if (!tap) return failure("TAP " + tap_name, tap.error());
  if (auto ok = signal_ready(common.ready_file); !ok) return failure("frontend", ok.error());
  auto counters = legs ? run_net_frontend(legs->coherence(), *legs, *tap, *mac, common.timing())
                       : run_net_frontend(link, *tap, *mac, common.timing());
  if (!counters) return failure("frontend", counters.error());
  std::fprintf(stderr, "cxlpool-devpool: frontend stopped: tx %llu rx %llu tap-errors %llu switches %llu\n",
               static_cast<unsigned long long>(counters->tx_frames),
               static_cast<unsigned long long>(counters->rx_frames),
               static_cast<unsigned long long>(counters->rx_tap_errors),
               static_cast<unsigned long long>(counters->switches));
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cxlpool-devpool — device pooling engines (network: TAP frontend, NetPort backend)"};
  app.set_version_flag("--version", "cxlpool-devpool " CXLPOOL_VERSION_STRING);
  app.require_subcommand(1);

  CommonArgs format_args;
  std::string format_file;
  auto* format = app.add_subcommand("format", "create (or reset) a link file");
  format->add_option("--link-file", format_file, "the link's file (on /dev/shm or another tmpfs)")->required();
  format->add_flag("--non-coherent", format_args.non_coherent, "channels for non-coherent shared memory");

  CommonArgs backend_args;
  PodArgs backend_pod;
  std::vector<std::string> backend_links;
  std::string nic, netport = "auto";
  bool promiscuous = false;
  auto* backend = app.add_subcommand("backend", "serve links through the NIC");
  backend->add_option("--link-file", backend_links, "a link to serve (repeat for several frontends)");
  backend->add_option("--socket", backend_pod.socket, "the pod daemon's control socket: register the NIC there");
  backend->add_option("--host", backend_pod.host, "this host's name in the pod (with --socket)");
  backend->add_option("--nic", nic, "the network interface to drive")->required();
  backend->add_option("--netport", netport, "NetPort backend: packet, afxdp (takes the NIC's queue from the host stack), dpdk (DPDK's "
                      "net_af_packet, or net_af_xdp with CXLPOOL_DPDK_PMD=af_xdp), or auto (packet)");
  backend->add_flag("--promiscuous", promiscuous, "receive every frame on the NIC (default: announced MACs)");
  backend_args.add_to(backend);

  CommonArgs frontend_args;
  PodArgs frontend_pod;
  std::string frontend_link, tap, mac;
  unsigned mtu = 1500;
  auto* frontend = app.add_subcommand("frontend", "give this host a TAP interface over a link");
  frontend->add_option("--link-file", frontend_link, "the link to the backend");
  frontend->add_option("--socket", frontend_pod.socket, "the pod daemon's control socket: attach there");
  frontend->add_option("--host", frontend_pod.host, "this host's name in the pod (with --socket)");
  frontend->add_option("--prefer", frontend_pod.prefer, "the NIC to ask the pod for (default: the least loaded)");
  frontend->add_option("--prefer-host", frontend_pod.prefer_host, "the host of --prefer");
  frontend->add_option("--tap", tap, "name of the TAP interface to create")->required();
  frontend->add_option("--mac", mac, "the TAP's MAC address")->required();
  frontend->add_option("--mtu", mtu, "the TAP's MTU");
  frontend_args.add_to(frontend);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (format->parsed()) {
    auto ok = format_link_file(format_file, format_args.geometry());
    if (!ok) return failure("format", ok.error());
    return kExitOk;
  }
  for (const PodArgs* pod : {&backend_pod, &frontend_pod}) {
    if (pod->pooled() && pod->host.empty()) {
      std::fprintf(stderr, "cxlpool-devpool: --socket needs --host (this host's name in the pod)\n");
      return kExitUsage;
    }
  }
  if (backend->parsed()) return run_backend(backend_args, backend_pod, backend_links, nic, netport, promiscuous);
  return run_frontend(frontend_args, frontend_pod, frontend_link, tap, mac, mtu);
}
