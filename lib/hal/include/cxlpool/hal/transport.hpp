// SPDX-License-Identifier: Apache-2.0
// Transport: one-sided reads and writes of registered memory between hosts
// of a pod. A transport has one or more rails (a network endpoint each, on
// its own local address) and, where the provider exists, a shared-memory
// endpoint for peers on the same host. Large transfers are sliced into
// chunks striped over the rails; a chunk that fails or stalls on one rail
// is sent again on another. Every chunk's CRC-32C is checked where its bytes
// landed (the reader checks what it read against the owner's checksum, the
// owner checks what was written against the writer's), so a request reports
// success only for bytes that arrived intact. Nothing throws; every call is
// safe from several threads at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::hal {

struct TransportOptions {
  // Local addresses (IPv4 or IPv6 literals), one per rail. Empty: one rail
  // on whatever address the provider picks first.
  std::vector<std::string> rails;
  // The network provider ("tcp;ofi_rxm" here; "verbs;ofi_rxm" on RDMA).
  std::string provider = "tcp;ofi_rxm";
  // Also open a shared-memory endpoint, used for peers on this host.
  bool shm = true;
  // Transfers are sliced into chunks of at most this many bytes (a power of
  // two between 4 KiB and 64 MiB).
  std::uint32_t chunk_bytes = 512 * 1024;
  // A chunk or control message not completed within this time has its rail
  // taken out of service and goes again on another rail.
  std::chrono::milliseconds op_timeout{2000};
  // A rail out of service is tried again (reconnected) after this long.
  std::chrono::milliseconds rail_retry_after{1000};
  // Attempts per chunk (first try included) before its request fails.
  std::uint32_t max_attempts = 4;
  // Identifies this host: peers with the same host id are reached through
  // shared memory. Empty: the kernel's boot id (the same in every network
  // namespace of one boot, different on every other host).
  std::string host_id;
};

enum class TransferOp : std::uint8_t { kRead, kWrite };

using PeerId = std::uint32_t;

// One transfer between a local registered region and a peer's.
struct TransferRequest {
  TransferOp op = TransferOp::kRead;
  PeerId peer = 0;
  std::uint64_t local_key = 0;
  std::uint64_t local_offset = 0;
  std::uint64_t remote_key = 0;
  std::uint64_t remote_offset = 0;
  std::uint64_t length = 0;
};

// The outcome of one request: error 0 when every byte arrived and matched
// its checksum; otherwise a positive errno (EINVAL bad request, ENOENT
// unknown region, ERANGE outside a region, EIO checksum mismatch after every
// attempt, ETIMEDOUT / EHOSTUNREACH no rail got it through) and a message.
struct TransferResult {
  int error = 0;
  std::string message;
  std::uint32_t retries = 0;  // chunk attempts beyond the first
};

struct RailStatus {
  std::string provider;  // "tcp;ofi_rxm", "shm"
  std::string address;   // the local address it is bound to, as the provider prints it
  bool up = true;        // false while out of service
  std::uint64_t bytes_read = 0, bytes_written = 0;
  std::uint64_t chunks = 0;
  std::uint64_t failures = 0;  // chunks or messages that failed or stalled on it
  std::uint64_t resets = 0;    // times it was taken out of service
};

struct TransportStats {
  std::uint64_t requests = 0, requests_failed = 0;
  std::uint64_t chunks_retried = 0;
  std::uint64_t checksum_mismatches = 0;
  std::uint64_t served_checks = 0;  // checksum requests this side answered as owner
};

class Transport {
 public:
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  virtual const char* backend_name() const = 0;

  // Makes [base, base+length) readable and writable by peers and usable as
  // local memory of requests, under `key` (unique in this transport).
  // EEXIST for a key in use, EINVAL for an empty range.
  virtual Result<void> register_region(std::uint64_t key, void* base, std::uint64_t length) = 0;
  // ENOENT for an unknown key. No request of this transport may use it then.
  virtual Result<void> unregister_region(std::uint64_t key) = 0;

  // What a peer needs to reach this transport: its addresses and the
  // regions registered so far (a text line; decode_peer_card checks it).
  virtual std::string card() const = 0;
  // Adds (or, for a card from the same transport, refreshes) a peer from
  // its card. Connections are made on first use. EINVAL for a bad card.
  virtual Result<PeerId> add_peer(std::string_view card) = 0;

  // Runs a batch and waits for all of it: one result per request, in order.
  virtual std::vector<TransferResult> transfer(std::span<const TransferRequest> requests) = 0;

  virtual std::vector<RailStatus> rails() const = 0;
  virtual TransportStats stats() const = 0;

 protected:
  Transport() = default;
};

}  // namespace cxlpool::hal
