// SPDX-License-Identifier: Apache-2.0
#include "pod_fabric.hpp"

#include <algorithm>

#include "../logging.hpp"
#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::daemon {
namespace {

// The rails [pod] asks for: its list, else the host of `address`.
std::vector<std::string> rails_of(const PodSection& config) {
  if (!config.rails.empty()) return config.rails;
  if (config.address.empty()) return {};
  std::string host = config.address.substr(0, config.address.rfind(':'));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host};
}

}  // namespace

std::string pod_metric_label(std::string_view host) {
  std::string out(host);
  std::replace(out.begin(), out.end(), '.', '_');
  return out;
}

PodFabric::PodFabric(const PodSection& config) : provider_(config.provider) {
  hal::TransportOptions options;
  options.rails = rails_of(config);
  options.provider = config.provider;
  options.shm = config.shm;
  auto opened = hal::open_transport("ofi", options);
  if (!opened) {
    error_ = opened.error().message;
    logger("pod")->error("transfer engine not opened ({}): this host serves local work only", error_);
    return;
  }
  transport_ = std::move(*opened);
  std::string rails;
  for (const auto& r : transport_->rails()) rails += (rails.empty() ? "" : ", ") + r.provider + " " + r.address;
  logger("pod")->info("transfer engine {} open: {}", transport_->backend_name(), rails);
}

PodFabric::~PodFabric() = default;

std::string PodFabric::description() const {
  if (!transport_) return {};
  return std::string(transport_->backend_name()) + " " + provider_;
}

std::string PodFabric::card() const { return transport_ ? transport_->card() : std::string(); }

void PodFabric::register_region(uint64_t key, void* base, uint64_t length) {
  if (!transport_) return;
  if (auto ok = transport_->register_region(key, base, length); !ok) {
    std::lock_guard lock(mutex_);
    ++register_failures_;
    logger("pod")->warn("transfer engine: region {:x} of {} bytes not registered: {}", key, length,
                        ok.error().message);
  }
}

Result<hal::PeerId> PodFabric::peer(const std::string& host, const std::string& card) {
  if (!transport_) return fail(ENOTCONN, "the transfer engine is not open: " + error_);
  std::lock_guard lock(mutex_);
  auto it = peers_.find(host);
  if (it != peers_.end() && it->second.card == card) return it->second.id;
  auto id = transport_->add_peer(card);
  if (!id) return tl::unexpected(id.error());
  peers_[host] = Peer{card, *id};
  return *id;
}

void PodFabric::count(const std::string& host, const std::function<void(PodPeerCounters&)>& change) {
  std::lock_guard lock(mutex_);
  change(counters_[host]);
}

void PodFabric::fill_status(proto::PodStatusReply& reply) const {
  reply.fabric = description();
  reply.fabric_error = error_.substr(0, proto::kMaxStringLength);
  if (transport_) {
    const hal::TransportStats s = transport_->stats();
    reply.transfer_requests = s.requests;
    reply.transfer_failures = s.requests_failed;
    reply.chunks_retried = s.chunks_retried;
    reply.checksum_mismatches = s.checksum_mismatches;
    for (const hal::RailStatus& r : transport_->rails()) {
      if (reply.rails.size() == proto::kMaxListEntries) break;
      reply.rails.push_back({.bytes_read = r.bytes_read,
                             .bytes_written = r.bytes_written,
                             .chunks = r.chunks,
                             .failures = r.failures,
                             .resets = r.resets,
                             .up = r.up ? uint8_t{1} : uint8_t{0},
                             .provider = r.provider.substr(0, proto::kMaxStringLength),
                             .address = r.address.substr(0, proto::kMaxStringLength)});
    }
  }
  std::lock_guard lock(mutex_);
  for (const auto& [host, c] : counters_) {
    if (reply.peers.size() == proto::kMaxListEntries) break;
    reply.peers.push_back({.fetched_chunks = c.fetched_chunks,
                           .fetched_bytes = c.fetched_bytes,
                           .fetch_errors = c.fetch_errors,
                           .retries = c.retries,
                           .pins_served = c.pins_served,
                           .host = host});
  }
}

namespace {

void add_totals(bool open, const hal::TransportStats& s, uint64_t register_failures,
                const std::function<void(std::string, uint64_t)>& add) {
  add("pod.fabric.open", open ? 1 : 0);
  add("pod.fabric.requests", s.requests);
  add("pod.fabric.requests_failed", s.requests_failed);
  add("pod.fabric.chunks_retried", s.chunks_retried);
  add("pod.fabric.checksum_mismatches", s.checksum_mismatches);
  add("pod.fabric.served_checks", s.served_checks);
  add("pod.fabric.register_failures", register_failures);
}

}  // namespace

void PodFabric::add_closed_counters(const std::function<void(std::string, uint64_t)>& add) {
  add_totals(false, {}, 0, add);
}

void PodFabric::add_counters(const std::function<void(std::string, uint64_t)>& add) const {
  uint64_t register_failures = 0;
  {
    std::lock_guard lock(mutex_);
    register_failures = register_failures_;
  }
  add_totals(transport_ != nullptr, transport_ ? transport_->stats() : hal::TransportStats{}, register_failures, add);
  if (transport_) {
    const auto rails = transport_->rails();
    for (size_t i = 0; i < rails.size(); ++i) {
      const std::string p = "pod.rail." + std::to_string(i) + ".";
      add(p + "up", rails[i].up ? 1 : 0);
      add(p + "bytes_read", rails[i].bytes_read);
      add(p + "bytes_written", rails[i].bytes_written);
      add(p + "chunks", rails[i].chunks);
      add(p + "failures", rails[i].failures);
      add(p + "resets", rails[i].resets);
    }
  }
  std::lock_guard lock(mutex_);
  for (const auto& [host, c] : counters_) {
    emit_counters("pod.peer." + pod_metric_label(host) + ".", c, add);
  }
}

}  // namespace cxlpool::daemon
