// SPDX-License-Identifier: Apache-2.0
// Memory the SSD device reads into and writes from, registered with it as
// fixed buffers: an O_DIRECT request on registered memory pins no pages
// (on the 2-vCPU VM pinning was a fifth to a third of the daemon's CPU per
// SSD put), and reads of a file into it run many at once where reads into
// unregistered memory went through the staging buffers and a copy.
//
// The table holds, after the log's own buffers: the arenas (in pieces of up
// to 1 GiB), or with per-namespace views one place per slot, each pointed at
// the view of the namespace that claimed the slot; then places for put-window
// slots the log writes from, each registered at its first lend and kept
// until its client goes.
// A device or kernel that refuses leaves that memory unregistered: its I/O
// goes out as plain requests.
#include <sys/uio.h>

#include <algorithm>

#include "kv_store_impl.hpp"

namespace cxlpool::kvcache {
namespace {

constexpr std::uint64_t kMaxFixedBuffer = 1ull << 30;  // io_uring's limit per buffer
constexpr std::size_t kMaxRegisteredBuffers = 1u << 14;  // IORING_MAX_REG_BUFFERS
// Put-window slots registered at once (8 GiB of 2 MiB slots); lends from
// slots beyond them are written unregistered.
constexpr std::size_t kWindowPlaces = 4096;

}  // namespace

void KvStore::Impl::register_with_ssd() {
  if (config.slot_bytes > kMaxFixedBuffer) return;
  fixed_piece = kMaxFixedBuffer / config.slot_bytes * config.slot_bytes;
  const std::size_t own = ssd->device().registered_buffer_count();
  // Views change pages when a slot passes to another namespace (the old
  // holder's range is punched), so a registration of whole views would pin
  // pages that are no longer theirs: one place per slot instead.
  const bool per_slot = memory != nullptr;
  if (per_slot) fixed_piece = config.slot_bytes;
  // Attempts: both arena tiers, the DRAM one only, none; each with the
  // window places.
  for (std::size_t tiers : {2u, 1u, 0u}) {
    std::vector<iovec> iov;
    std::int32_t base[2] = {hal::kNoRegisteredBuffer, hal::kNoRegisteredBuffer};
    for (std::size_t t = 0; t < tiers; ++t) {
      const ArenaTier& a = arenas[t];
      if (!a.present()) continue;
      base[t] = static_cast<std::int32_t>(iov.size());
      if (per_slot) {
        iov.resize(iov.size() + a.slots.capacity(), iovec{nullptr, 0});
        continue;
      }
      const std::uint64_t used = a.slots.capacity() * config.slot_bytes;
      for (std::uint64_t off = 0; off < used; off += fixed_piece) {
        iov.push_back(iovec{a.bytes.data() + off, static_cast<std::size_t>(std::min(fixed_piece, used - off))});
      }
    }
    if (own + iov.size() > kMaxRegisteredBuffers) continue;
    const auto windows = static_cast<std::int32_t>(iov.size());
    const std::size_t window_places = std::min(kWindowPlaces, kMaxRegisteredBuffers - own - iov.size());
    iov.resize(iov.size() + window_places, iovec{nullptr, 0});
    // The log's own buffers come first; ours follow them.
    auto first = ssd->register_buffers(iov);
    if (!first) {
      // One refusal however many smaller tables are tried after it: the
      // count says how often registration was refused, not how hard.
      if (tiers == 2) registration_refused(first.error());
      continue;
    }
    for (std::size_t t = 0; t < 2; ++t) {
      if (base[t] == hal::kNoRegisteredBuffer) continue;
      fixed_base[t] = base[t] + *first;
      if (per_slot) slot_holder[t].assign(arenas[t].slots.capacity(), 0);
    }
    for (std::size_t w = window_places; w > 0; --w) {
      free_window_places.push_back(*first + windows + static_cast<std::int32_t>(w - 1));
    }
    // Every slot a read can land in has a place: the read staging buffers
    // would never be used (register_slot brings them back if the kernel
    // refuses a slot after all).
    const bool every_slot = std::all_of(std::begin(arenas), std::end(arenas), [&](const ArenaTier& a) {
      return !a.present() || fixed_base[&a - arenas] != hal::kNoRegisteredBuffer;
    });
    if (every_slot) (void)ssd->release_staging();
    return;
  }
}

void KvStore::Impl::registration_refused(const Error& why) {
  ++counters.ssd_registration_errors;
  ssd_registration_refusal = why.message;
}

// A refusal (RLIMIT_MEMLOCK, memory that cannot be pinned) ends the tier's
// registrations: its I/O goes out unregistered from then on, and no claim
// pays for another refused system call. The slots registered so far are
// let go at once: a registration left behind would keep pinning pages its
// view punches when the slot passes to another namespace. Reads of a file
// into unregistered slots want the staging buffers back.
void KvStore::Impl::register_slot(KvTier t, std::uint64_t offset, std::uint32_t ns_id) {
  const std::size_t ti = tier_index(t);
  const std::uint64_t piece = offset / fixed_piece;
  const iovec place{slot_ptr(t, offset, ns_id), config.slot_bytes};
  auto updated = ssd->device().update_buffer(static_cast<std::uint32_t>(fixed_base[ti] + piece), place);
  if (updated) {
    slot_holder[ti][piece] = ns_id;
    ++counters.ssd_registrations;
    return;
  }
  registration_refused(updated.error());
  for (std::size_t i = 0; i < slot_holder[ti].size(); ++i) {
    if (slot_holder[ti][i] == 0) continue;
    (void)ssd->device().update_buffer(static_cast<std::uint32_t>(fixed_base[ti]) + static_cast<std::uint32_t>(i),
                                      iovec{nullptr, 0});
  }
  fixed_base[ti] = hal::kNoRegisteredBuffer;
  slot_holder[ti].clear();
  ssd->restore_staging();
}

// On the slot's first lend: the client wrote it, so its pages are there
// and pinning them allocates nothing (registering a whole window at connect
// pinned, and zeroed, every page of it, 256 MiB in the benchmark, on the
// event loop). A refusal ends the registration of windows, every client's:
// the limit that refused one would refuse the next.
std::int32_t KvStore::Impl::window_buffer(ClientState& c, std::uint64_t window_offset) {
  if (windows_unregistered) return hal::kNoRegisteredBuffer;
  const std::uint64_t slot = window_offset / config.slot_bytes;
  if (c.window_places.empty()) c.window_places.assign(c.window.size() / config.slot_bytes, hal::kNoRegisteredBuffer);
  std::int32_t& place = c.window_places[slot];
  if (place != hal::kNoRegisteredBuffer || free_window_places.empty()) return place;
  const iovec bytes{c.window.data() + slot * config.slot_bytes, config.slot_bytes};
  if (auto updated = ssd->device().update_buffer(static_cast<std::uint32_t>(free_window_places.back()), bytes);
      !updated) {
    registration_refused(updated.error());
    windows_unregistered = true;
    return hal::kNoRegisteredBuffer;
  }
  place = free_window_places.back();
  free_window_places.pop_back();
  ++counters.ssd_registrations;
  return place;
}

// Before the window is unmapped: the device lets go of its pages. Nothing
// of the window is on the device by then (its lends came back). Not while
// the store closes: the log hands its lends back from its destructor, and
// the device's registrations go with its rings.
void KvStore::Impl::release_window_places(std::vector<std::int32_t>& places) {
  if (closing) return;
  for (const std::int32_t place : places) {
    if (place == hal::kNoRegisteredBuffer) continue;
    (void)ssd->device().update_buffer(static_cast<std::uint32_t>(place), iovec{nullptr, 0});
    free_window_places.push_back(place);
  }
  places.clear();
}

}  // namespace cxlpool::kvcache
