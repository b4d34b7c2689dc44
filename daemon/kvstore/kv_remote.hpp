// SPDX-License-Identifier: Apache-2.0
// What the KV service asks of the pod (docs/pods.md, "The KV store across
// the pod"): fetching chunks a peer holds into DRAM slots reserved here,
// making this daemon's views readable by peers, and having peers keep
// copies of the chunks put here. The pod side works on
// threads of its own; the service hands it jobs and takes results on the
// event loop, which never waits for the network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/kvcache/namespace.hpp"
#include "cxlpool/kvcache/tier.hpp"
#include "cxlpool/proto/kv_ring.hpp"

namespace cxlpool::daemon {

// The transport region key of namespace ns_id's view of an arena tier: the
// same on every host for the same local id (peers learn it from the pin
// answer, never guess it).
inline uint64_t kv_view_region_key(uint32_t ns_id, kvcache::KvTier tier) {
  return (uint64_t{ns_id} << 8) | static_cast<uint64_t>(tier);
}

// Chunks a get misses here, to be read from whichever peer holds them.
struct KvFetchJob {
  uint64_t ticket = 0;
  kvcache::NamespaceFingerprint fp;  // the namespace as every host knows it
  uint32_t ns_id = 0;                // its id here
  std::vector<proto::KvKey> keys;    // in prefix order
  std::vector<uint64_t> offsets;     // a reserved DRAM slot per key (its offset in the view)
  std::vector<std::byte*> slots;     // the same slots in the daemon's mapping of the view
  // A copy of a peer's put (docs/pods.md, "Replicas") rather than a get's
  // miss: the holder that asked for it is asked first.
  bool replica = false;
  std::string holder;
};

struct KvFetchedChunk {
  uint32_t length = 0;
  uint32_t crc = 0;  // CRC-32C of the bytes, checked against the holder's
};

// chunks[i] arrived whole for keys[i]: a prefix of the job's keys (empty:
// no peer holds the first key, or its read failed).
struct KvFetchResult {
  uint64_t ticket = 0;
  std::vector<KvFetchedChunk> chunks;
};

// A lookup that stops short here: how many of `keys` (the keys after the
// prefix held here) the pod's peers hold, asked as a get would fetch them.
struct KvProbeJob {
  uint64_t ticket = 0;
  kvcache::NamespaceFingerprint fp;
  std::vector<proto::KvKey> keys;  // in prefix order, at most kMaxPinKeys
};

struct KvProbeResult {
  uint64_t ticket = 0;
  size_t held = 0;  // leading keys of the job that peers hold
};

class KvRemote {
 public:
  virtual ~KvRemote() = default;
  // Whether a fetch could find anything: the pod has peers to ask.
  [[nodiscard]] virtual bool has_peers() const = 0;
  virtual void fetch(KvFetchJob job) = 0;
  // Appends finished jobs.
  virtual void take_results(std::vector<KvFetchResult>& out) = 0;
  // Asks the peers how much of a prefix they hold, pinning nothing; the
  // answer comes out of take_probe_results().
  virtual void probe(KvProbeJob job) = 0;
  virtual void take_probe_results(std::vector<KvProbeResult>& out) = 0;
  // A namespace's view of an arena tier exists: peers may read it and
  // fetches land in it.
  virtual void register_view(uint32_t ns_id, kvcache::KvTier tier, std::span<std::byte> bytes) = 0;
  // Whether the chunks a put commits here are to be copied to peers
  // ([pod] replica_num > 1).
  [[nodiscard]] virtual bool replicates() const { return false; }
  // A put committed these chunks of namespace `fp` here: have peers keep
  // copies. Returns at once (the copies are made later, or dropped).
  virtual void replicate(const kvcache::NamespaceFingerprint& /*fp*/, std::span<const proto::KvKey> /*keys*/) {}
};

// A chunk pinned here for a peer's read.
struct KvPeerChunk {
  uint64_t region_key = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint32_t crc = 0;
  bool crc_known = false;
  bool loaded = false;               // read from SSD for this pin
  const std::byte* bytes = nullptr;  // the daemon's mapping of it (for the CRC when not known)
};

// How a peer's pin is answered, from the event loop, once its chunks are
// pinned (later than the request when some had to be read from SSD).
// Returns false when nobody waits any more: the caller then unpins them.
using KvPeerPinAnswer = std::function<bool(std::vector<KvPeerChunk>)>;

}  // namespace cxlpool::daemon
