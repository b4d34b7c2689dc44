// SPDX-License-Identifier: Apache-2.0
// Clients: their put windows, leases and quota, and everything that goes
// when one disconnects.
#include <algorithm>
#include <cerrno>

#include "cxlpool/common/clock.hpp"
#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {

ClientState* KvStore::Impl::client(KvClientId id) {
  auto it = clients.find(id);
  return it == clients.end() ? nullptr : &it->second;
}

std::uint64_t KvStore::Impl::now_ns() const { return config.clock ? config.clock() : monotonic_ns(); }

bool KvStore::Impl::over_quota(const ClientState& c, std::uint64_t bytes) {
  if (config.client_quota_bytes == 0 || c.account->held_bytes + bytes <= config.client_quota_bytes) return false;
  ++counters.quota_rejections;
  return true;
}

KvStatus KvStore::Impl::admit_lease(KvClientId, ClientState& c, std::uint64_t bytes) {
  if (c.leases >= config.max_leases_per_client) return KvStatus::kTooManyLeases;
  if (over_quota(c, bytes)) return KvStatus::kOverQuota;
  return KvStatus::kOk;
}

// `keys` are pinned already; the lease takes those pins over.
std::uint64_t KvStore::Impl::open_lease(KvClientId id, ClientState& c, std::span<const ChunkKey> keys) {
  Lease* lease = nullptr;
  const std::uint64_t lease_id = leases.open(id, &lease);
  lease->keys.assign(keys.begin(), keys.end());
  if (config.lease_timeout_ns != 0) lease->opened_ns = now_ns();
  for (const ChunkKey& k : keys) {
    if (const ChunkEntry* e = index.find(k)) lease->bytes += e->info.length;
  }
  charge(c, lease->bytes);
  ++c.leases;
  leased_bytes += lease->bytes;
  return lease_id;
}

KvStatus KvStore::Impl::release_lease(KvClientId id, std::uint64_t lease_id) {
  Lease* lease = leases.find(lease_id);
  ClientState* c = client(id);
  if (lease == nullptr || lease->client != id || c == nullptr) return KvStatus::kNotFound;
  for (const ChunkKey& k : lease->keys) unpin_key(k);
  uncharge(*c, lease->bytes);
  --c->leases;
  leased_bytes -= lease->bytes;
  leases.close(lease_id);
  return KvStatus::kOk;
}

Result<void> KvStore::add_client(KvClientId client, std::span<std::byte> put_window) {
  // Own accounts live above the 32-bit uids the daemon uses.
  return add_client(client, put_window, (std::uint64_t{1} << 63) | client);
}

Result<void> KvStore::add_client(KvClientId client, std::span<std::byte> put_window, std::uint64_t account) {
  return add_client(client, put_window, account, nullptr);
}

Result<void> KvStore::add_client(KvClientId client, std::span<std::byte> put_window, std::uint64_t account,
                                 std::shared_ptr<const void> window_owner) {
  Impl& s = *impl_;
  // An id whose window copies behind its commits still read cannot come
  // back before they are in: they give their slots back by id.
  const bool filling =
      std::any_of(s.fills.begin(), s.fills.end(), [client](const auto& f) { return f.second.client == client; });
  if (s.clients.contains(client) || s.retired_windows.contains(client) || filling) {
    return fail(EEXIST, "kv store: client already added");
  }
  ClientState& c = s.clients[client];
  c.window = put_window;
  c.window_owner = std::move(window_owner);
  c.window_slots = SlotPool(put_window.size(), config_.slot_bytes);
  c.account_id = account;
  c.account = &s.accounts[account];
  ++c.account->clients;
  return {};
}

std::size_t KvStore::expire_leases() {
  Impl& s = *impl_;
  if (s.config.lease_timeout_ns == 0 || s.leases.live() == 0) return 0;
  const std::uint64_t now = s.now_ns();
  if (now < s.config.lease_timeout_ns) return 0;
  std::vector<std::uint64_t> ids;
  s.leases.opened_before(now - s.config.lease_timeout_ns, ids);
  std::size_t revoked = 0;
  for (std::uint64_t id : ids) {
    const Lease* lease = s.leases.find(id);
    if (lease != nullptr && s.release_lease(lease->client, id) == KvStatus::kOk) ++revoked;
  }
  s.counters.leases_expired += revoked;
  return revoked;
}

void KvStore::remove_client(KvClientId client) {
  Impl& s = *impl_;
  auto it = s.clients.find(client);
  if (it == s.clients.end()) return;
  std::vector<std::uint64_t> ids;
  s.leases.ids_of(client, ids);
  for (std::uint64_t id : ids) (void)s.release_lease(client, id);
  s.cancel_commits(client);
  for (const auto& [id, r] : it->second.reservations) {
    --s.reservations_live;
    s.counters.put_aborts += r.chunks.size();
  }
  s.cancel_pending_gets(client);
  std::erase_if(s.ready, [client](const KvStoreCompletion& c) { return c.client == client; });
  // What is left (reservations, gets waiting for reads) leaves the account.
  ClientState& c = it->second;
  // Window slots the SSD log writes from: those of the open region are
  // copied into its buffer now (it may not fill for a long time); the
  // window stays mapped only for those whose region is being written.
  if (c.window_lent != 0) s.reclaim_window_lends(client);
  if (c.window_lent != 0) {
    s.retired_windows[client] = RetiredWindow{std::move(c.window_owner), c.window_lent, std::move(c.window_places)};
  } else if (!c.window_places.empty()) {
    s.release_window_places(c.window_places);
  }
  if (!s.ssd_evicted.empty()) s.reap_ssd_evictions();  // what the reclaim dropped
  Impl::uncharge(c, c.held_bytes);
  if (--c.account->clients == 0) s.accounts.erase(c.account_id);
  s.clients.erase(it);
}

}  // namespace cxlpool::kvcache
