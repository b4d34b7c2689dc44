// SPDX-License-Identifier: Apache-2.0
#include "channel_exchange.hpp"

#include <sched.h>

#include <cstring>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/mix64.hpp"
#include "cxlpool/devpool/line_access.hpp"

namespace cxlpool::vmtest {
namespace {

using devpool::ChannelConsumer;
using devpool::ChannelGeometry;
using devpool::ChannelProducer;
using devpool::NonCoherentLines;

constexpr uint64_t kMagic = 0x4e41'4843'4d56'5843ull;  // "CXVMCHAN"
constexpr size_t kFirstChannel = 4096;

struct Rendezvous {
  uint32_t count;
  uint32_t slots;
  uint64_t to_guest_offset;
  uint64_t to_host_offset;
  uint64_t channel_bytes;
  uint8_t coherence;
  uint8_t pad[23];
  uint64_t magic;  // last word: written last, read first
};
static_assert(sizeof(Rendezvous) == devpool::kLineBytes);

struct Record {
  uint64_t seq;
  uint64_t value;
  uint64_t check;
};
static_assert(sizeof(Record) == 24);

// Each direction salts its values, so a record that crossed into the wrong
// channel fails its check too.
uint64_t salt(ChannelRole from) { return from == ChannelRole::kHost ? 0x686f7374ull : 0x67756573ull; }

Record make_record(ChannelRole from, uint64_t seq) {
  Record r{seq, mix64(seq ^ salt(from)), 0};
  r.check = mix64(r.seq * 0x9e3779b97f4a7c15ull + r.value + salt(from));
  return r;
}

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

void write_back_range(NonCoherentLines& lines, std::span<std::byte> range) {
  for (size_t off = 0; off < range.size(); off += devpool::kLineBytes) lines.write_back(range.data() + off);
  lines.fence();
}

Result<Rendezvous> await_rendezvous(std::span<std::byte> region, NonCoherentLines& lines, uint64_t deadline) {
  if (region.size() < kFirstChannel) return fail(EINVAL, "region shorter than the rendezvous area");
  Rendezvous r{};
  while (true) {
    lines.invalidate(region.data());
    lines.load(region.data(), &r);
    if (r.magic == kMagic) break;
    if (monotonic_ns() > deadline) return fail(ETIMEDOUT, "no rendezvous line: the host never formatted the region");
    sched_yield();
  }
  const uint64_t end = std::max(r.to_guest_offset, r.to_host_offset) + r.channel_bytes;
  if (end > region.size() || r.to_guest_offset % 64 != 0 || r.to_host_offset % 64 != 0) {
    return fail(EPROTO, "rendezvous line names channels outside the region");
  }
  return r;
}

}  // namespace

ChannelGeometry exchange_geometry(devpool::Coherence coherence) {
  ChannelGeometry g;
  g.slots = 64;
  g.record_bytes = sizeof(Record);
  g.coherence = coherence;
  return g;
}

size_t exchange_region_bytes(const ChannelGeometry& g) {
  return kFirstChannel + 2 * round_up(devpool::channel_bytes(g), 4096);
}

Result<void> format_exchange(std::span<std::byte> region, const ChannelGeometry& g, uint32_t count) {
  if (region.size() < exchange_region_bytes(g)) return fail(EINVAL, "region too small for the exchange");
  const size_t bytes = devpool::channel_bytes(g);
  const size_t to_guest = kFirstChannel;
  const size_t to_host = kFirstChannel + round_up(bytes, 4096);
  NonCoherentLines lines;
  for (size_t off : {to_guest, to_host}) {
    auto channel = region.subspan(off, bytes);
    if (auto r = devpool::format_channel(channel, g); !r) return r;
    write_back_range(lines, channel);
  }
  Rendezvous r{};
  r.count = count;
  r.slots = g.slots;
  r.to_guest_offset = to_guest;
  r.to_host_offset = to_host;
  r.channel_bytes = bytes;
  r.coherence = static_cast<uint8_t>(g.coherence);
  r.magic = kMagic;
  lines.store(region.data(), &r);
  write_back_range(lines, region.first(devpool::kLineBytes));
  return {};
}

Result<ExchangeStats> run_exchange(std::span<std::byte> region, ChannelRole role, const ExchangeOptions& options) {
  const uint64_t start = monotonic_ns();
  const uint64_t deadline = start + uint64_t{options.timeout_ms} * 1'000'000;
  NonCoherentLines probe_lines;
  auto rv = await_rendezvous(region, probe_lines, deadline);
  if (!rv) return tl::unexpected(rv.error());
  const bool host = role == ChannelRole::kHost;
  auto out_memory = region.subspan(host ? rv->to_guest_offset : rv->to_host_offset, rv->channel_bytes);
  auto in_memory = region.subspan(host ? rv->to_host_offset : rv->to_guest_offset, rv->channel_bytes);
  auto producer = ChannelProducer<NonCoherentLines>::attach(out_memory);
  if (!producer) return tl::unexpected(producer.error());
  auto consumer = ChannelConsumer<NonCoherentLines>::attach(in_memory);
  if (!consumer) return tl::unexpected(consumer.error());
  const ChannelRole peer = host ? ChannelRole::kGuest : ChannelRole::kHost;

  ExchangeStats stats;
  const uint64_t count = rv->count;
  Record batch[16];
  while (stats.sent < count || stats.received < count) {
    bool progress = false;
    while (stats.sent < count) {
      Record r = make_record(role, stats.sent);
      if (stats.sent == options.corrupt_at) r.check ^= 1;
      if (!producer->push(&r)) break;
      ++stats.sent;
      progress = true;
    }
    producer->flush();
    auto got = consumer->poll(batch, 16);
    if (!got) return tl::unexpected(got.error());
    for (uint32_t i = 0; i < *got; ++i) {
      const Record want = make_record(peer, stats.received);
      if (std::memcmp(&batch[i], &want, sizeof want) != 0) {
        return fail(EBADMSG, "record " + std::to_string(stats.received) + ": got seq " +
                                 std::to_string(batch[i].seq) + " value " + std::to_string(batch[i].value) +
                                 " check " + std::to_string(batch[i].check) + ", want seq " +
                                 std::to_string(want.seq) + " (sequence or checksum mismatch)");
      }
      ++stats.received;
    }
    progress = progress || *got > 0;
    if (!progress) {
      if (monotonic_ns() > deadline) {
        return fail(ETIMEDOUT, "stalled: sent " + std::to_string(stats.sent) + ", received " +
                                   std::to_string(stats.received) + " of " + std::to_string(count) +
                                   " (producer in flight " + std::to_string(producer->in_flight()) + ")");
      }
      sched_yield();
    }
  }
  stats.elapsed_ns = monotonic_ns() - start;
  return stats;
}

}  // namespace cxlpool::vmtest
