// SPDX-License-Identifier: Apache-2.0
#include "pod_links.hpp"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <set>

#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::devpool_tool {
namespace {

using Clock = std::chrono::steady_clock;

// The NIC's link speed in bit/s (what the allocator weighs load against);
// 10 Gbit/s when the driver does not say (a TAP, a virtual device without
// a speed).
uint64_t link_speed_bps(const std::string& nic) {
  constexpr uint64_t kUnknown = 10'000'000'000;
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return kUnknown;
  ethtool_cmd cmd{};
  cmd.cmd = ETHTOOL_GSET;
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", nic.c_str());
  ifr.ifr_data = reinterpret_cast<char*>(&cmd);
  if (::ioctl(fd.get(), SIOCETHTOOL, &ifr) != 0) return kUnknown;
  const uint32_t mbps = ethtool_cmd_speed(&cmd);
  if (mbps == 0 || mbps == static_cast<uint32_t>(SPEED_UNKNOWN)) return kUnknown;
  return uint64_t{mbps} * 1'000'000;
}

// A served link's name: which attachment, which leg, which slot.
uint64_t link_key(uint32_t attachment, int leg, uint32_t slot) {
  return (uint64_t{attachment} << 33) | (uint64_t(leg & 1) << 32) | slot;
}
uint32_t key_slot(uint64_t key) { return static_cast<uint32_t>(key); }

// The pod file a reply carried.
Result<std::unique_ptr<PodTable>> map_reply_pod(proto::Received& received, uint64_t pod_bytes) {
  if (received.fds.size() != 1) return fail(EPROTO, "the daemon's reply carried no pod file");
  auto table = PodTable::map(received.fds[0].get(), pod_bytes);
  if (!table) return tl::unexpected(table.error());
  return std::make_unique<PodTable>(std::move(*table));
}

}  // namespace

Result<PodTable> PodTable::map(int fd, uint64_t bytes) {
  auto mapping = Mapping::map(bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
  if (!mapping) return tl::unexpected(mapping.error());
  auto geometry = devpool::read_pod_header({mapping->data(), mapping->length()});
  if (!geometry) return fail(geometry.error().code, "pod file: " + geometry.error().message);
  PodTable table;
  table.mapping_ = std::move(*mapping);
  table.geometry_ = *geometry;
  return table;
}

Result<devpool::AttachmentLine> PodTable::attachment(uint32_t index) {
  const std::span<std::byte> memory(mapping_.data(), mapping_.length());
  if (geometry_.coherence == devpool::Coherence::kNonCoherent) {
    auto reader = devpool::PodTableReader<devpool::NonCoherentLines>::open(memory);
    if (!reader) return tl::unexpected(reader.error());
    return reader->attachment(index);
  }
  auto reader = devpool::PodTableReader<devpool::CoherentLines>::open(memory);
  if (!reader) return tl::unexpected(reader.error());
  return reader->attachment(index);
}

Result<devpool::LinkView> PodTable::link(uint32_t slot) {
  auto memory = devpool::pod_slot({mapping_.data(), mapping_.length()}, geometry_, slot);
  if (!memory) return tl::unexpected(memory.error());
  auto view = devpool::open_link(*memory);
  if (!view) return fail(view.error().code, "link slot " + std::to_string(slot) + ": " + view.error().message);
  return view;
}

// ---- backend ----

Result<std::unique_ptr<PodBackendLinks>> PodBackendLinks::register_nic(const PodBackendOptions& options,
                                                                      hal::NetPort& port) {
  std::unique_ptr<PodBackendLinks> links(new PodBackendLinks(options, port));
  if (auto ok = links->register_device(); !ok) return tl::unexpected(ok.error());
  return links;
}

Result<void> PodBackendLinks::register_device() {
  if (!conn_) {
    auto conn = client::Connection::open(options_.socket, "cxlpool-devpool backend " + options_.host);
    if (!conn) return tl::unexpected(conn.error());
    conn_ = std::move(*conn);
  }
  proto::DevRegister request{.kind = proto::DevKind::kNet, .capacity = link_speed_bps(options_.nic),
                             .name = options_.nic, .host = options_.host};
  std::memcpy(request.mac, port_.mac().bytes.data(), 6);
  auto received = conn_->call(request);
  if (!received) return fail(received.error().code, "register " + options_.nic + ": " + received.error().message);
  auto* reply = std::get_if<proto::DevRegisterReply>(&received->envelope.message);
  if (reply == nullptr) return fail(EPROTO, "register: not a DevRegisterReply");
  if (!table_) {
    auto table = map_reply_pod(*received, reply->pod_bytes);
    if (!table) return tl::unexpected(table.error());
    table_ = std::move(*table);
  }
  device_id_ = reply->device_id;
  telemetry_ = std::chrono::milliseconds(std::max<uint32_t>(reply->telemetry_ms, 1));
  healthy_ = true;
  rescan_ = true;
  std::fprintf(stderr,
               "cxlpool-devpool: registered %s on %s as device %u (lease %u ms, heartbeat every %u ms)\n",
               options_.nic.c_str(), options_.host.c_str(), device_id_, reply->lease_ms, reply->telemetry_ms);
  return {};
}

Result<void> PodBackendLinks::heartbeat(const BackendCounters& counters, Clock::time_point now) {
  const double seconds =
      last_beat_ == Clock::time_point{} ? 0 : std::chrono::duration<double>(now - last_beat_).count();
  const uint64_t bytes = counters.tx_bytes + counters.rx_bytes;
  const uint64_t frames = counters.tx_frames + counters.rx_frames;
  proto::DevHeartbeat beat{.device_id = device_id_};
  if (seconds > 0) {
    beat.bytes_per_s = static_cast<uint64_t>(static_cast<double>(bytes - last_bytes_) / seconds);
    beat.ops_per_s = static_cast<uint64_t>(static_cast<double>(frames - last_frames_) / seconds);
  }
  last_bytes_ = bytes;
  last_frames_ = frames;
  last_beat_ = now;
  auto up = port_.link_up();
  const bool link_up = up ? *up : true;
  beat.link_up = link_up ? 1 : 0;
  if (link_up != link_up_) {
    std::fprintf(stderr, "cxlpool-devpool: %s link %s\n", options_.nic.c_str(), link_up ? "up" : "down");
    link_up_ = link_up;
  }
  auto reply = conn_->call_for<proto::DevHeartbeatReply>(beat);
  if (!reply) {
    if (reply.error().code != ESTALE) return fail(reply.error().code, "heartbeat: " + reply.error().message);
    // The lease ran out (this engine hung): the device was failed over and
    // must register again.
    std::fprintf(stderr, "cxlpool-devpool: device %u lost its lease; registering again\n", device_id_);
    return register_device();
  }
  const bool healthy = reply->health == proto::DevHealth::kHealthy;
  if (reply->table_version != table_version_ || healthy != healthy_) rescan_ = true;
  table_version_ = reply->table_version;
  healthy_ = healthy;
  return {};
}

Result<bool> PodBackendLinks::poll(const BackendCounters& counters, LinkChange& change) {
  const auto now = Clock::now();
  if (now >= next_beat_) {
    if (auto ok = heartbeat(counters, now); !ok) return tl::unexpected(ok.error());
    next_beat_ = now + telemetry_;
  }
  if (!rescan_ && now < next_scan_) return false;
  next_scan_ = now + kScanInterval;
  auto changed = scan(change);
  if (changed) rescan_ = false;
  return changed;
}

Result<bool> PodBackendLinks::scan(LinkChange& change) {
  // What the table gives this device now. A device that is not healthy
  // serves nothing: its legs were moved, and a slot it gets again later is
  // formatted afresh.
  std::map<uint64_t, uint32_t> wanted;
  if (healthy_ && link_up_) {
    for (uint32_t i = 0; i < table_->geometry().max_attachments; ++i) {
      auto line = table_->attachment(i);
      if (!line) {
        if (line.error().code == EAGAIN) return false;  // being rewritten: look again soon
        return tl::unexpected(line.error());
      }
      if (line->state != devpool::LineState::kInUse ||
          line->kind != static_cast<uint8_t>(devpool::DeviceKind::kNet)) {
        continue;
      }
      for (int leg = 0; leg < 2; ++leg) {
        if (line->device[leg] == device_id_) wanted[link_key(line->attachment_id, leg, line->slot[leg])] = device_id_;
      }
    }
  }
  for (const auto& [key, device] : served_) {
    if (!wanted.contains(key) || wanted[key] != device) change.removed.push_back(key);
  }
  for (const auto& [key, device] : wanted) {
    auto it = served_.find(key);
    if (it != served_.end() && it->second == device) continue;
    auto view = table_->link(key_slot(key));
    if (!view) return tl::unexpected(view.error());
    change.added.emplace_back(key, *view);
  }
  if (change.added.empty() && change.removed.empty()) return false;
  std::fprintf(stderr, "cxlpool-devpool: device %u serves %zu link(s) (+%zu -%zu)\n", device_id_, wanted.size(),
               change.added.size(), change.removed.size());
  served_ = std::move(wanted);
  return true;
}

// ---- frontend ----

Result<std::unique_ptr<PodFrontendLegs>> PodFrontendLegs::attach(const PodFrontendOptions& options) {
  std::unique_ptr<PodFrontendLegs> legs(new PodFrontendLegs());
  auto conn = client::Connection::open(options.socket, "cxlpool-devpool frontend " + options.host);
  if (!conn) return tl::unexpected(conn.error());
  legs->conn_ = std::move(*conn);
  auto received = legs->conn_->call(proto::DevAttach{
      .kind = proto::DevKind::kNet, .host = options.host, .preferred = options.prefer,
      .preferred_host = options.prefer_host});
  if (!received) return fail(received.error().code, "attach: " + received.error().message);
  auto* reply = std::get_if<proto::DevAttachReply>(&received->envelope.message);
  if (reply == nullptr) return fail(EPROTO, "attach: not a DevAttachReply");
  legs->reply_ = *reply;
  auto table = map_reply_pod(*received, reply->pod_bytes);
  if (!table) return tl::unexpected(table.error());
  legs->table_ = std::move(*table);
  std::fprintf(stderr, "cxlpool-devpool: attachment %u: primary device %u (slot %u), backup device %u (slot %u)\n",
               reply->attachment_id, reply->device[reply->active], reply->slot[reply->active],
               reply->device[reply->active ^ 1], reply->slot[reply->active ^ 1]);
  return legs;
}

Result<bool> PodFrontendLegs::poll(FrontendLegs& legs) {
  auto line = table_->attachment(reply_.line);
  if (!line) {
    if (line.error().code == EAGAIN) return false;  // being rewritten: the next pass reads it
    return tl::unexpected(line.error());
  }
  if (line->state != devpool::LineState::kInUse || line->attachment_id != reply_.attachment_id) {
    return fail(ENOENT, "attachment " + std::to_string(reply_.attachment_id) + " ended");
  }
  if (!first_ && line->generation == generation_) return false;
  for (int i = 0; i < 2; ++i) {
    FrontendLeg& leg = legs.leg[i];
    leg.present = line->device[i] != proto::kNoDeviceId;
    // A leg that got another device was formatted again.
    leg.fresh = leg.present && (first_ || line->device[i] != device_[i]);
    if (leg.present) {
      auto view = table_->link(line->slot[i]);
      if (!view) return tl::unexpected(view.error());
      leg.view = *view;
    }
    device_[i] = line->device[i];
  }
  legs.active = line->active;
  if (!first_) {
    std::fprintf(stderr, "cxlpool-devpool: attachment %u: generation %u, active leg %u on device %u, other leg device %u\n",
                 reply_.attachment_id, line->generation, line->active, line->device[line->active & 1],
                 line->device[(line->active & 1) ^ 1]);
  }
  first_ = false;
  generation_ = line->generation;
  return true;
}

}  // namespace cxlpool::devpool_tool
