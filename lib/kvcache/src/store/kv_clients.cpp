// SPDX-License-Identifier: Apache-2.0
// Clients: their put windows, leases and quota, and everything that goes
// when one disconnects.
#include <algorithm>
#include <cerrno>

#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {

ClientState* KvStore::Impl::client(KvClientId id) {
  auto it = clients.find(id);
  return it == clients.end() ? nullptr : &it->second;
}

int KvStore::Impl::admit_lease(KvClientId, ClientState& c, std::uint64_t bytes) {
  if (c.leases >= config.max_leases_per_client) return EMFILE;
  if (config.client_quota_bytes != 0 && c.held_bytes + bytes > config.client_quota_bytes) {
    ++counters.quota_rejections;
    return EDQUOT;
  }
  return 0;
}

// `keys` are pinned already; the lease takes those pins over.
std::uint64_t KvStore::Impl::open_lease(KvClientId id, ClientState& c, std::span<const ChunkKey> keys) {
  Lease* lease = nullptr;
  const std::uint64_t lease_id = leases.open(id, &lease);
  lease->keys.assign(keys.begin(), keys.end());
  for (const ChunkKey& k : keys) {
    if (const ChunkEntry* e = index.find(k)) lease->bytes += e->info.length;
  }
  c.held_bytes += lease->bytes;
  ++c.leases;
  leased_bytes += lease->bytes;
  return lease_id;
}

int KvStore::Impl::release_lease(KvClientId id, std::uint64_t lease_id) {
  Lease* lease = leases.find(lease_id);
  ClientState* c = client(id);
  if (lease == nullptr || lease->client != id || c == nullptr) return ENOENT;
  for (const ChunkKey& k : lease->keys) unpin_key(k);
  c->held_bytes -= lease->bytes;
  --c->leases;
  leased_bytes -= lease->bytes;
  leases.close(lease_id);
  return 0;
}

void KvStore::remove_client(KvClientId client) {
  Impl& s = *impl_;
  auto it = s.clients.find(client);
  if (it == s.clients.end()) return;
  std::vector<std::uint64_t> ids;
  s.leases.ids_of(client, ids);
  for (std::uint64_t id : ids) (void)s.release_lease(client, id);
  for (const auto& [id, r] : it->second.reservations) {
    --s.reservations_live;
    s.counters.put_aborts += r.chunks.size();
  }
  s.cancel_pending_gets(client);
  std::erase_if(s.ready, [client](const KvStoreCompletion& c) { return c.client == client; });
  s.clients.erase(client);
}

}  // namespace cxlpool::kvcache
