// SPDX-License-Identifier: Apache-2.0
// Messages per second through the device channel (lib/devpool) with one
// thread per side, 16-byte records, next to the alternatives measured in the
// same run:
//   coherent        the channel with plain loads and stores
//   nc-line         the non-coherent protocol: write back + fence per slot,
//                   invalidate each slot line once, after its last record
//   nc-per-message  the same, invalidating and re-reading the line before
//                   every record (an uncached, per-message channel)
//   seqpacket-1     AF_UNIX SOCK_SEQPACKET, one 16-byte message per send,
//                   blocking recv
//   seqpacket-64    the same, 64 records (1 KiB) per send
//   access-ring-1   lib/proto's general SPSC ring (32-byte entries, one
//                   release store per publish), one entry per publish
//   access-ring-64  the same, 64 entries per publish
// The consumer checks every record's sequence number, so each rate counts
// delivered, in-order messages. The producer runs on CPU 0 and the consumer
// on CPU 1 when there are two. Each variant runs --runs times for --seconds
// and the median rate is printed, then the ratios.
//
//   channel_bench [--seconds S] [--runs R] [--slots N]
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench_timing.hpp"
#include "cxlpool/devpool/channel.hpp"
#include "cxlpool/proto/access_ring.hpp"
#include "support/pin_thread.hpp"

namespace {

using namespace cxlpool;
using namespace cxlpool::devpool;

constexpr uint32_t kRecordBytes = 16;
constexpr uint32_t kBatch = 64;

struct Record {
  uint64_t sequence;
  uint64_t payload;
};
static_assert(sizeof(Record) == kRecordBytes);

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "channel_bench: %s\n", what.c_str());
  std::exit(1);
}

void check(const Record& r, uint64_t& expected) {
  if (r.sequence != expected) {
    die("message " + std::to_string(expected) + " expected, got " + std::to_string(r.sequence));
  }
  ++expected;
}

// One timed run: the producer sends until `stop`, then says how many it
// sent; the consumer receives exactly that many. Returns messages/s.
struct Run {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> total{~uint64_t{0}};
};

double timed_run(double seconds, const std::function<void(Run&)>& produce, const std::function<void(Run&)>& consume) {
  Run run;
  const double start = bench::now_s();
  std::thread producer([&] {
    cxlpool::test::pin_thread_to_cpu(0);
    produce(run);
  });
  std::thread consumer([&] {
    cxlpool::test::pin_thread_to_cpu(1);
    consume(run);
  });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  run.stop.store(true, std::memory_order_relaxed);
  producer.join();
  consumer.join();
  const double elapsed = bench::now_s() - start;
  return static_cast<double>(run.total.load()) / elapsed;
}

// Every shared-memory variant busy-polls; on a machine with more runnable
// threads than CPUs a side that spins while its peer is descheduled only
// delays it, so each side yields after a run of empty polls or full pushes.
struct Backoff {
  void miss() {
    if (++misses % 256 == 0) sched_yield();
  }
  uint32_t misses = 0;
};

bool done(Run& run, uint64_t received) { return received == run.total.load(std::memory_order_acquire); }

struct AlignedBytes {
  explicit AlignedBytes(size_t n) : size(n), data(static_cast<std::byte*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {
    std::memset(data, 0, size);
  }
  ~AlignedBytes() { std::free(data); }
  std::span<std::byte> span() const { return {data, size}; }
  size_t size;
  std::byte* data;
};

template <class Lines>
double channel_run(double seconds, uint32_t slots, Coherence coherence, bool per_record) {
  const ChannelGeometry g{.slots = slots, .record_bytes = kRecordBytes, .coherence = coherence};
  AlignedBytes memory(channel_bytes(g));
  if (!format_channel(memory.span(), g)) die("format_channel");
  auto producer = ChannelProducer<Lines>::attach(memory.span());
  auto consumer = ChannelConsumer<Lines>::attach(memory.span());
  if (!producer || !consumer) die("attach");
  consumer->set_per_record_reload(per_record);
  return timed_run(
      seconds,
      [&](Run& run) {
        uint64_t sent = 0;
        Record r{0, 0};
        Backoff backoff;
        while (!run.stop.load(std::memory_order_relaxed)) {
          for (int i = 0; i < 1024; ++i) {
            r.sequence = sent;
            while (!producer->push(&r)) backoff.miss();
            ++sent;
          }
        }
        producer->flush();
        run.total.store(sent, std::memory_order_release);
      },
      [&](Run& run) {
        Record out[kBatch];
        uint64_t received = 0;
        Backoff backoff;
        while (!done(run, received)) {
          auto n = consumer->poll(out, kBatch);
          if (!n) die(n.error().message);
          if (*n == 0) backoff.miss();
          for (uint32_t i = 0; i < *n; ++i) check(out[i], received);
        }
      });
}

double seqpacket_run(double seconds, uint32_t batch) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) die("socketpair");
  const double rate = timed_run(
      seconds,
      [&](Run& run) {
        uint64_t sent = 0;
        std::vector<Record> buf(batch);
        while (!run.stop.load(std::memory_order_relaxed)) {
          for (int i = 0; i < 64; ++i) {
            for (uint32_t j = 0; j < batch; ++j) buf[j].sequence = sent + j;
            if (::send(fds[0], buf.data(), batch * kRecordBytes, 0) != static_cast<ssize_t>(batch * kRecordBytes)) {
              die(std::string("send: ") + std::strerror(errno));
            }
            sent += batch;
          }
        }
        run.total.store(sent, std::memory_order_release);
        // An empty message wakes a consumer blocked in recv at the end.
        if (::send(fds[0], buf.data(), 0, 0) != 0) die(std::string("send: ") + std::strerror(errno));
      },
      [&](Run& run) {
        std::vector<Record> buf(batch);
        uint64_t received = 0;
        while (!done(run, received)) {
          const ssize_t n = ::recv(fds[1], buf.data(), batch * kRecordBytes, 0);
          if (n < 0) {
            if (errno == EINTR) continue;
            die(std::string("recv: ") + std::strerror(errno));
          }
          for (ssize_t i = 0; i < n / static_cast<ssize_t>(kRecordBytes); ++i) check(buf[i], received);
        }
      });
  ::close(fds[0]);
  ::close(fds[1]);
  return rate;
}

double access_ring_run(double seconds, uint32_t entries, uint32_t batch) {
  AlignedBytes memory(proto::access_ring_bytes(entries));
  if (!proto::access_ring_init(memory.span(), entries)) die("access_ring_init");
  auto producer = proto::AccessRingProducer::attach(memory.span());
  auto consumer = proto::AccessRingConsumer::attach(memory.span(), entries);
  if (!producer || !consumer) die("access ring attach");
  return timed_run(
      seconds,
      [&](Run& run) {
        uint64_t sent = 0;
        std::vector<proto::AccessRingEntry> buf(batch);
        for (auto& e : buf) e.length = e.count = 1;
        while (!run.stop.load(std::memory_order_relaxed)) {
          for (int i = 0; i < 1024 / static_cast<int>(batch) + 1; ++i) {
            for (uint32_t j = 0; j < batch; ++j) buf[j].region_id = sent + j;
            size_t done_now = 0;
            Backoff backoff;
            while (done_now < batch) {
              const size_t pushed = producer->try_push(std::span(buf).subspan(done_now));
              if (pushed == 0) backoff.miss();
              done_now += pushed;
            }
            sent += batch;
          }
        }
        run.total.store(sent, std::memory_order_release);
      },
      [&](Run& run) {
        std::vector<proto::AccessRingEntry> out;
        out.reserve(kBatch);
        uint64_t received = 0;
        Backoff backoff;
        while (!done(run, received)) {
          out.clear();
          if (consumer->drain(out, kBatch).entries == 0) backoff.miss();
          if (consumer->broken()) die("access ring broken");
          for (const auto& e : out) {
            if (e.region_id != received) die("access ring: out of order");
            ++received;
          }
        }
      });
}

double median_of(int runs, const std::function<double()>& one) {
  std::vector<double> rates;
  for (int i = 0; i < runs; ++i) rates.push_back(one());
  return bench::median(rates);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0.8;
  int runs = 3;
  uint32_t slots = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::strtod(argv[i + 1], nullptr);
    else if (std::strcmp(argv[i], "--runs") == 0) runs = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--slots") == 0) slots = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 0));
    else {
      std::fprintf(stderr, "usage: %s [--seconds S] [--runs R] [--slots N]\n", argv[0]);
      return 2;
    }
  }
  if (runs < 1 || seconds <= 0) die("--runs and --seconds must be positive");
  std::printf("channel_bench: %u CPUs, %u slots (%u records of %u bytes each), median of %d runs of %.1f s\n",
              std::thread::hardware_concurrency(), slots, ChannelGeometry{.slots = slots}.records_per_slot(),
              kRecordBytes, runs, seconds);
  struct Row {
    const char* name;
    std::function<double()> run;
    double rate = 0;
  };
  // The access ring's capacity in entries matches the channel's in records.
  const uint32_t ring_entries = slots * 4;
  std::vector<Row> rows = {
      {"coherent", [&] { return channel_run<CoherentLines>(seconds, slots, Coherence::kCoherent, false); }},
      {"nc-line", [&] { return channel_run<NonCoherentLines>(seconds, slots, Coherence::kNonCoherent, false); }},
      {"nc-per-message", [&] { return channel_run<NonCoherentLines>(seconds, slots, Coherence::kNonCoherent, true); }},
      {"seqpacket-1", [&] { return seqpacket_run(seconds, 1); }},
      {"seqpacket-64", [&] { return seqpacket_run(seconds, kBatch); }},
      {"access-ring-1", [&] { return access_ring_run(seconds, ring_entries, 1); }},
      {"access-ring-64", [&] { return access_ring_run(seconds, ring_entries, kBatch); }},
  };
  for (auto& row : rows) {
    row.rate = median_of(runs, row.run);
    std::printf("%-16s %8.2f M msg/s\n", row.name, row.rate / 1e6);
    std::fflush(stdout);
  }
  auto rate = [&](const char* name) {
    for (const auto& r : rows) {
      if (std::strcmp(r.name, name) == 0) return r.rate;
    }
    return 0.0;
  };
  std::printf("ratio coherent / seqpacket-1        %.1fx\n", rate("coherent") / rate("seqpacket-1"));
  std::printf("ratio coherent / seqpacket-64       %.1fx\n", rate("coherent") / rate("seqpacket-64"));
  std::printf("ratio coherent / access-ring-1      %.2fx\n", rate("coherent") / rate("access-ring-1"));
  std::printf("ratio nc-line / nc-per-message      %.2fx\n", rate("nc-line") / rate("nc-per-message"));
  std::printf("ratio coherent / nc-line            %.2fx\n", rate("coherent") / rate("nc-line"));
  return 0;
}
