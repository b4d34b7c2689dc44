// SPDX-License-Identifier: Apache-2.0
// Namespaces: ids by fingerprint, listing with per-tier counts, admin drop,
// and indexing what the SSD log recovered at start.
#include <cerrno>
#include <string>

#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {

std::optional<std::uint32_t> KvStore::Impl::ns_for_fingerprint(const NamespaceFingerprint& fp, bool create) {
  if (auto it = ns_by_fp.find(fp); it != ns_by_fp.end()) return it->second;
  if (!create || namespaces.size() >= config.max_namespaces) return std::nullopt;
  namespaces.push_back(NamespaceState{fp, {}, true});
  const auto id = static_cast<std::uint32_t>(namespaces.size());
  ns_by_fp.emplace(fp, id);
  return id;
}

// SSD chunks come back as SSD-tier chunks of namespaces known only by
// fingerprint until a client opens the same spec. Entries that cannot be
// served (larger than a slot, no namespace or index room) stay unindexed;
// the log's FIFO reclaims them in time.
void KvStore::Impl::index_recovered_ssd() {
  ssd->for_each_entry([this](const SsdEntryInfo& e) {
    if (e.payload_bytes == 0 || e.payload_bytes > config.slot_bytes) return;
    auto id = ns_for_fingerprint(e.ns, true);
    if (!id) return;
    ChunkInfo info;
    info.tier = KvTier::kSsd;
    info.flags = kChunkSsdCopy;
    info.ns_id = *id;
    info.length = e.payload_bytes;
    info.sequence = next_sequence++;
    (void)index.insert(e.key, info);
  });
}

std::vector<KvNamespaceInfo> KvStore::namespaces() const {
  const Impl& s = *impl_;
  std::vector<KvNamespaceInfo> out(s.namespaces.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].id = static_cast<std::uint32_t>(i + 1);
    out[i].fp = s.namespaces[i].fp;
    out[i].spec = s.namespaces[i].spec;
    out[i].recovered_only = s.namespaces[i].recovered_only;
  }
  s.index.for_each([&](const ChunkEntry& e) {
    if (e.info.ns_id == 0 || e.info.ns_id > out.size() || (e.info.flags & kChunkDoomed)) return;
    KvNamespaceInfo& n = out[e.info.ns_id - 1];
    ++n.chunks[tier_index(e.info.tier)];
    n.bytes[tier_index(e.info.tier)] += e.info.length;
  });
  return out;
}

std::uint32_t KvStore::namespace_count() const { return static_cast<std::uint32_t>(impl_->namespaces.size()); }

Result<KvDropResult> KvStore::drop_namespace(std::uint32_t ns_id) {
  Impl& s = *impl_;
  const NamespaceState* ns = s.ns(ns_id);
  if (ns == nullptr) return fail(ENOENT, "kv store: no namespace " + std::to_string(ns_id));
  KvDropResult result;
  // Chunks whose copies are not in leave now, their slots with the copies.
  std::vector<ChunkKey> filling;
  s.index.for_each([&](const ChunkEntry& e) {
    if (e.info.ns_id == ns_id && (e.info.flags & kChunkFilling) && !(e.info.flags & kChunkDoomed)) {
      filling.push_back(e.key);
    }
  });
  for (const ChunkKey& key : filling) result.dropped += s.abandon_fill(key) ? 1 : 0;
  s.index.for_each([&](const ChunkEntry& e) {
    if (e.info.ns_id == ns_id && e.pins != 0 && !(e.info.flags & kChunkDoomed)) ++result.deferred;
  });
  // Leased chunks are doomed: they leave at their last release.
  for (const ChunkEntry& e : s.index.drop_namespace(ns_id)) {
    s.forget_resident(e);
    ++result.dropped;
  }
  s.counters.deletes += result.dropped + result.deferred;
  if (s.ssd) {
    s.ssd_touched = true;
    auto erased = s.ssd->erase_namespace(ns->fp);
    if (!s.ssd_evicted.empty()) s.reap_ssd_evictions();
    if (!erased) return tl::unexpected(erased.error());
  }
  return result;
}

}  // namespace cxlpool::kvcache
