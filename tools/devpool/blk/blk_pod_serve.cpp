// SPDX-License-Identifier: Apache-2.0
#include "blk_pod_serve.hpp"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "cxlpool/client/connection.hpp"
#include "cxlpool/common/mapping.hpp"
#include "cxlpool/devpool/link_file.hpp"
#include "cxlpool/devpool/pod_region.hpp"
#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::devpool::blk {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeviceWait = std::chrono::microseconds(20);

int die(const Error& e, const std::string& what) {
  std::fprintf(stderr, "cxlpool-devpool-blk: %s: %s\n", what.c_str(), e.message.c_str());
  return 1;
}

// What the serve loop tells the heartbeat thread, and what it hears back.
struct Shared {
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> ops{0};
  std::atomic<std::uint64_t> table_version{1};
  std::atomic<int> failed{0};  // errno of a heartbeat the daemon refused
};

// One link slot this device serves: its own open of the SSD (one ring per
// link, so completions and registered buffers never mix between links).
struct Served {
  std::uint32_t attachment = 0;
  LinkFile link;
  std::unique_ptr<hal::BlockDevice> device;
  std::unique_ptr<BlkBackend> backend;
  std::uint64_t counted_bytes = 0, counted_ops = 0;
};

void heartbeats(client::Connection& conn, std::uint32_t device_id, std::chrono::milliseconds period, Shared& shared,
                const std::atomic<bool>& stop) {
  std::uint64_t last_bytes = 0, last_ops = 0;
  auto last = Clock::now();
  while (!stop.load()) {
    std::this_thread::sleep_for(period);
    const auto now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - last).count();
    const std::uint64_t bytes = shared.bytes.load(), ops = shared.ops.load();
    proto::DevHeartbeat beat{.device_id = device_id,
                             .link_up = 1,
                             .bytes_per_s = static_cast<std::uint64_t>(static_cast<double>(bytes - last_bytes) / seconds),
                             .ops_per_s = static_cast<std::uint64_t>(static_cast<double>(ops - last_ops) / seconds)};
    last = now;
    last_bytes = bytes;
    last_ops = ops;
    auto reply = conn.call_for<proto::DevHeartbeatReply>(beat);
    if (!reply) {
      std::fprintf(stderr, "cxlpool-devpool-blk: heartbeat: %s\n", reply.error().message.c_str());
      shared.failed.store(reply.error().code ? reply.error().code : EIO);
      return;
    }
    shared.table_version.store(reply->table_version);
  }
}

template <class Lines>
class PodServer {
 public:
  PodServer(const PodServeConfig& config, std::uint32_t device_id, int pod_fd, std::span<std::byte> pod,
            PodTableReader<Lines> reader)
      : config_(config), device_id_(device_id), pod_fd_(pod_fd), reader_(reader),
        slots_offset_(pod_layout(reader.geometry())->slots_offset) {
    (void)pod;
  }

  int run(Shared& shared, const std::atomic<bool>& stop) {
    std::uint64_t seen_version = 0;
    auto idle_since = Clock::now();
    auto sleep = std::chrono::nanoseconds(1000);
    bool waiting = false;
    while (!stop.load(std::memory_order_relaxed)) {
      if (shared.failed.load() != 0) return die(Error{shared.failed.load(), "the daemon dropped the device"}, "pod");
      const std::uint64_t version = shared.table_version.load();
      if (version != seen_version) {
        seen_version = version;
        if (auto ok = rescan(); !ok) return die(ok.error(), "pod table");
      }
      bool moved = false;
      std::uint32_t in_flight = 0;
      for (auto& [slot, s] : served_) {
        auto r = s.backend->step(waiting && served_.size() == 1 ? kDeviceWait : std::chrono::nanoseconds(0));
        if (!r) return die(r.error(), "serve slot " + std::to_string(slot));
        moved = moved || *r;
        in_flight += s.backend->in_flight();
        count(s, shared);
      }
      if (moved) {
        waiting = false;
        idle_since = Clock::now();
        sleep = std::chrono::nanoseconds(1000);
        continue;
      }
      waiting = in_flight > 0;
      if (waiting) continue;
      if (Clock::now() - idle_since < config_.backend.spin) continue;
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::duration_cast<std::chrono::nanoseconds>(config_.backend.max_sleep));
    }
    for (auto& [slot, s] : served_) add_stats(total_, s.backend->stats());
    std::printf("cxlpool-devpool-blk: %llu commands: %llu reads, %llu writes, %llu flushes, %llu rejected, "
                "%llu device errors\n",
                static_cast<unsigned long long>(total_.commands), static_cast<unsigned long long>(total_.reads),
                static_cast<unsigned long long>(total_.writes), static_cast<unsigned long long>(total_.flushes),
                static_cast<unsigned long long>(total_.rejected), static_cast<unsigned long long>(total_.device_errors));
    std::fflush(stdout);
    return 0;
  }

 private:
  void count(Served& s, Shared& shared) {
    const BlkBackendStats& st = s.backend->stats();
    const std::uint64_t bytes = st.bytes_read + st.bytes_written, ops = st.reads + st.writes + st.flushes;
    shared.bytes.fetch_add(bytes - s.counted_bytes, std::memory_order_relaxed);
    shared.ops.fetch_add(ops - s.counted_ops, std::memory_order_relaxed);
    s.counted_bytes = bytes;
    s.counted_ops = ops;
  }

  // The slots the table gives this device now: slot → attachment.
  Result<std::map<std::uint32_t, std::uint32_t>> wanted() {
    std::map<std::uint32_t, std::uint32_t> out;
    for (std::uint32_t i = 0; i < reader_.geometry().max_attachments; ++i) {
      auto line = reader_.attachment(i);
      if (!line) return tl::unexpected(line.error());
      if (line->state != LineState::kInUse || line->kind != static_cast<std::uint8_t>(DeviceKind::kBlk)) continue;
      for (int leg = 0; leg < 2; ++leg) {
        if (line->device[leg] == device_id_) out[line->slot[leg]] = line->attachment_id;
      }
    }
    return out;
  }

  Result<void> rescan() {
    auto want = wanted();
    if (!want) return tl::unexpected(want.error());
    // A slot that left this device (or now belongs to another attachment)
    // is let go once nothing of it is on the device; its lock goes with it.
    for (auto it = served_.begin(); it != served_.end();) {
      auto w = want->find(it->first);
      const bool keep = w != want->end() && w->second == it->second.attachment;
      if (!keep && it->second.backend->in_flight() == 0) {
        std::printf("cxlpool-devpool-blk: released slot %u (attachment %u)\n", it->first, it->second.attachment);
        add_stats(total_, it->second.backend->stats());
        it = served_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& [slot, attachment] : *want) {
      if (served_.count(slot) != 0) continue;
      if (auto ok = serve(slot, attachment); !ok) {
        std::fprintf(stderr, "cxlpool-devpool-blk: slot %u: %s\n", slot, ok.error().message.c_str());
      }
    }
    std::fflush(stdout);
    return {};
  }

  Result<void> serve(std::uint32_t slot, std::uint32_t attachment) {
    const std::uint64_t offset = slots_offset_ + std::uint64_t{slot} * reader_.geometry().slot_bytes;
    auto link = LinkFile::adopt(pod_fd_, offset);
    if (!link) return tl::unexpected(link.error());
    if (auto ok = link->hold_backend_lock(); !ok) return tl::unexpected(ok.error());
    auto device = hal::open_block_device(config_.engine, config_.ssd, config_.open);
    if (!device) return tl::unexpected(device.error());
    if (auto bound = (*device)->bind_to_thread(); !bound) return tl::unexpected(bound.error());
    Served s;
    s.attachment = attachment;
    s.link = std::move(*link);
    s.device = std::move(*device);
    auto backend = make_blk_backend(s.link.view(), *s.device, config_.backend);
    if (!backend) return tl::unexpected(backend.error());
    s.backend = std::move(*backend);
    std::printf("cxlpool-devpool-blk: serving slot %u (attachment %u)\n", slot, attachment);
    served_.emplace(slot, std::move(s));
    return {};
  }

  const PodServeConfig& config_;
  std::uint32_t device_id_;
  int pod_fd_;
  PodTableReader<Lines> reader_;
  std::uint64_t slots_offset_;
  std::map<std::uint32_t, Served> served_;
  BlkBackendStats total_;
};

template <class Lines>
int serve_with(const PodServeConfig& config, std::uint32_t device_id, int pod_fd, Mapping& pod, Shared& shared,
               const std::atomic<bool>& stop) {
  auto reader = PodTableReader<Lines>::open({pod.data(), pod.length()});
  if (!reader) return die(reader.error(), "pod file");
  PodServer<Lines> server(config, device_id, pod_fd, {pod.data(), pod.length()}, *reader);
  return server.run(shared, stop);
}

}  // namespace

int serve_pod(const PodServeConfig& config, const std::atomic<bool>& stop) {
  // The capacity the allocator hears of is what the device serves.
  std::uint64_t capacity = 0;
  {
    auto probe = hal::open_block_device(config.engine, config.ssd, config.open);
    if (!probe) return die(probe.error(), "open " + config.ssd);
    capacity = device_info_of(**probe, config.backend).capacity;
  }
  auto conn = client::Connection::open(config.socket, "cxlpool-devpool-blk " + config.host + "/" + config.name);
  if (!conn) return die(conn.error(), "connect");
  auto received = (*conn)->call(proto::DevRegister{.kind = proto::DevKind::kBlk,
                                                   .capacity = capacity,
                                                   .iops = config.nominal_iops,
                                                   .bandwidth_bps = config.nominal_bandwidth,
                                                   .name = config.name,
                                                   .host = config.host});
  if (!received) return die(received.error(), "register");
  auto* reply = std::get_if<proto::DevRegisterReply>(&received->envelope.message);
  if (reply == nullptr || received->fds.size() != 1) return die(Error{EPROTO, "not a register reply with the pod file"}, "register");
  const UniqueFd pod_fd = std::move(received->fds[0]);
  auto pod = Mapping::map(reply->pod_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, pod_fd.get());
  if (!pod) return die(pod.error(), "map the pod file");
  std::printf("cxlpool-devpool-blk: device %u (%s on %s, %llu bytes) registered\nready\n", reply->device_id,
              config.name.c_str(), config.host.c_str(), static_cast<unsigned long long>(capacity));
  std::fflush(stdout);

  Shared shared;
  std::atomic<bool> beating_stop{false};
  std::thread beat(heartbeats, std::ref(**conn), reply->device_id, std::chrono::milliseconds(reply->telemetry_ms),
                   std::ref(shared), std::cref(beating_stop));
  PodServeConfig served = config;
  // The futex doorbell needs one host's memory; a non-coherent pod polls.
  if (reply->coherence == 1) served.backend.doorbell = false;
  const int rc = reply->coherence == 1
                     ? serve_with<NonCoherentLines>(served, reply->device_id, pod_fd.get(), *pod, shared, stop)
                     : serve_with<CoherentLines>(served, reply->device_id, pod_fd.get(), *pod, shared, stop);
  beating_stop.store(true);
  beat.join();
  return rc;
}

}  // namespace cxlpool::devpool::blk
