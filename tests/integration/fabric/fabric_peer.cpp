// SPDX-License-Identifier: Apache-2.0
// Both ends of the Transport's tests and benchmark, one per network
// namespace: `serve` exports a memfd region and answers; `verify` moves
// patterns both ways and checks every byte; `bench` times transfers;
// `tcp-serve`/`tcp-rtt` time a plain TCP request/response on the same path.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/transport.hpp"

namespace {

using namespace cxlpool;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kServerKey = 1;
constexpr std::uint64_t kClientKey = 7;

struct Args {
  std::string mode;
  hal::TransportOptions options;
  std::string card_file;
  std::uint64_t region_bytes = 64ull << 20;
  double seconds = 3;
  int threads = 1;
  std::uint64_t bytes = 4 << 20;
  std::uint64_t max_bytes = 8 << 20;
  int depth = 4;
  bool write = false;
  std::vector<std::string> positional;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool parse(int argc, char** argv, Args* a) {
  if (argc < 2) return false;
  a->mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--rails") a->options.rails = split_commas(value());
    else if (k == "--provider") a->options.provider = value();
    else if (k == "--no-shm") a->options.shm = false;
    else if (k == "--host-id") a->options.host_id = value();
    else if (k == "--chunk") a->options.chunk_bytes = static_cast<std::uint32_t>(std::stoul(value()));
    else if (k == "--timeout-ms") a->options.op_timeout = std::chrono::milliseconds(std::stol(value()));
    else if (k == "--card") a->card_file = value();
    else if (k == "--region-mib") a->region_bytes = std::stoull(value()) << 20;
    else if (k == "--seconds") a->seconds = std::stod(value());
    else if (k == "--threads") a->threads = std::stoi(value());
    else if (k == "--bytes") a->bytes = std::stoull(value());
    else if (k == "--max-bytes") a->max_bytes = std::stoull(value());
    else if (k == "--depth") a->depth = std::stoi(value());
    else if (k == "--write") a->write = true;
    else if (k.starts_with("--")) return false;
    else a->positional.push_back(k);
  }
  return true;
}

// A memfd mapping, as the daemon's tier regions are.
std::byte* memfd_region(std::uint64_t bytes) {
  const int fd = ::memfd_create("fabric-peer", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return nullptr;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  ::close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

std::byte pattern_byte(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t x = (i / 8 + 1) * 0x9e3779b97f4a7c15ull ^ seed * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 29;
  return static_cast<std::byte>(x >> ((i % 8) * 8));
}

void fill(std::byte* p, std::uint64_t n, std::uint64_t seed, std::uint64_t from) {
  for (std::uint64_t i = 0; i < n; ++i) p[i] = pattern_byte(seed, from + i);
}

std::unique_ptr<hal::Transport> open_or_die(const Args& a) {
  auto t = hal::open_transport("ofi", a.options);
  if (!t) {
    std::fprintf(stderr, "fabric_peer: %s\n", t.error().message.c_str());
    std::exit(t.error().code == ENODATA || t.error().code == ENOTSUP ? 77 : 1);
  }
  return std::move(*t);
}

std::string read_card(const std::string& path) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream in(path);
    std::string line;
    if (std::getline(in, line) && !line.empty()) return line;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::fprintf(stderr, "fabric_peer: no card in %s\n", path.c_str());
  std::exit(1);
}

void print_rails(const hal::Transport& t) {
  int i = 0;
  for (const auto& r : t.rails()) {
    std::printf("rail %d %s %s up=%d read=%llu written=%llu chunks=%llu failures=%llu resets=%llu\n", i++,
                r.provider.c_str(), r.address.c_str(), r.up ? 1 : 0, (unsigned long long)r.bytes_read,
                (unsigned long long)r.bytes_written, (unsigned long long)r.chunks, (unsigned long long)r.failures,
                (unsigned long long)r.resets);
  }
  const auto s = t.stats();
  std::printf("requests=%llu failed=%llu retried_chunks=%llu checksum_mismatches=%llu\n",
              (unsigned long long)s.requests, (unsigned long long)s.requests_failed,
              (unsigned long long)s.chunks_retried, (unsigned long long)s.checksum_mismatches);
}

int serve(const Args& a) {
  auto t = open_or_die(a);
  std::byte* region = memfd_region(a.region_bytes);
  if (region == nullptr) return 1;
  fill(region, a.region_bytes, kServerKey, 0);
  if (auto ok = t->register_region(kServerKey, region, a.region_bytes); !ok) {
    std::fprintf(stderr, "fabric_peer: %s\n", ok.error().message.c_str());
    return 1;
  }
  const std::string card = t->card();
  if (!a.card_file.empty()) {
    const std::string tmp = a.card_file + ".tmp";
    std::ofstream(tmp) << card << "\n";
    std::rename(tmp.c_str(), a.card_file.c_str());
  }
  std::printf("%s\n", card.c_str());
  std::fflush(stdout);
  // Serve until whoever started us closes our input.
  char c;
  while (::read(0, &c, 1) > 0) {
  }
  return 0;
}

struct Client {
  std::unique_ptr<hal::Transport> t;
  hal::PeerId peer = 0;
  std::byte* local = nullptr;
  std::uint64_t local_bytes = 0;
  std::uint64_t remote_bytes = 0;
};

Client connect(const Args& a) {
  Client c;
  c.t = open_or_die(a);
  c.local_bytes = a.region_bytes;
  c.local = memfd_region(c.local_bytes);
  if (c.local == nullptr || !c.t->register_region(kClientKey, c.local, c.local_bytes)) std::exit(1);
  const std::string card = read_card(a.card_file);
  auto peer = c.t->add_peer(card);
  if (!peer) {
    std::fprintf(stderr, "fabric_peer: %s\n", peer.error().message.c_str());
    std::exit(1);
  }
  c.peer = *peer;
  c.remote_bytes = a.region_bytes;
  return c;
}

int verify(const Args& a) {
  Client c = connect(a);
  // The owner's pattern, read back whole: every byte as it was written there.
  {
    const std::uint64_t n = std::min(c.remote_bytes, c.local_bytes);
    hal::TransferRequest r{hal::TransferOp::kRead, c.peer, kClientKey, 0, kServerKey, 0, n};
    auto res = c.t->transfer({&r, 1});
    if (res[0].error != 0) {
      std::printf("FAIL initial read: %s\n", res[0].message.c_str());
      return 1;
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      if (c.local[i] != pattern_byte(kServerKey, i)) {
        std::printf("FAIL initial read: byte %llu differs\n", (unsigned long long)i);
        return 1;
      }
    }
  }
  // Each thread owns a slice of both regions: writes a fresh pattern there,
  // reads it back into the other half of its local slice, compares.
  std::atomic<std::uint64_t> transfers{0}, bad{0}, bytes{0};
  const auto end = Clock::now() + std::chrono::duration<double>(a.seconds);
  std::mutex print_mu;
  auto worker = [&](int id) {
    const std::uint64_t slice = std::min(c.local_bytes, c.remote_bytes) / static_cast<std::uint64_t>(a.threads);
    const std::uint64_t half = slice / 2;
    const std::uint64_t base = slice * static_cast<std::uint64_t>(id);
    std::mt19937_64 rng(static_cast<std::uint64_t>(id) * 7919 + 1);
    std::uint64_t seed = 1000 + static_cast<std::uint64_t>(id) * 1'000'000;
    while (Clock::now() < end) {
      const std::uint64_t len = 1 + rng() % std::min(a.max_bytes, half);
      const std::uint64_t off = rng() % (half - len + 1);
      ++seed;
      fill(c.local + base + off, len, seed, 0);
      hal::TransferRequest w{hal::TransferOp::kWrite, c.peer, kClientKey, base + off, kServerKey, base + off, len};
      auto wr = c.t->transfer({&w, 1});
      hal::TransferRequest r{hal::TransferOp::kRead, c.peer, kClientKey, base + half + off, kServerKey, base + off, len};
      auto rr = c.t->transfer({&r, 1});
      transfers += 2;
      bytes += 2 * len;
      bool ok = wr[0].error == 0 && rr[0].error == 0 &&
                std::memcmp(c.local + base + off, c.local + base + half + off, len) == 0;
      if (!ok) {
        ++bad;
        std::lock_guard guard(print_mu);
        std::printf("FAIL %llu bytes at %llu: write '%s' read '%s'\n", (unsigned long long)len,
                    (unsigned long long)(base + off), wr[0].message.c_str(), rr[0].message.c_str());
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < a.threads; ++i) threads.emplace_back(worker, i);
  for (auto& th : threads) th.join();
  std::printf("transfers=%llu bytes=%llu bad=%llu\n", (unsigned long long)transfers.load(),
              (unsigned long long)bytes.load(), (unsigned long long)bad.load());
  print_rails(*c.t);
  return bad == 0 && transfers > 0 ? 0 : 1;
}

int bench(const Args& a) {
  Client c = connect(a);
  const std::uint64_t per_thread = std::min(c.local_bytes, c.remote_bytes) / static_cast<std::uint64_t>(a.threads);
  const int depth = std::max<int>(1, std::min<std::uint64_t>(a.depth, per_thread / a.bytes));
  // Warm up: connections and first touches are not what is measured.
  {
    hal::TransferRequest r{hal::TransferOp::kRead, c.peer, kClientKey, 0, kServerKey, 0, a.bytes};
    for (int i = 0; i < 20; ++i) c.t->transfer({&r, 1});
  }
  std::atomic<std::uint64_t> ops{0}, failed{0};
  std::mutex lat_mu;
  std::vector<double> latencies;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(a.seconds);
  auto worker = [&](int id) {
    std::vector<hal::TransferRequest> batch;
    for (int d = 0; d < depth; ++d) {
      const std::uint64_t off = per_thread * static_cast<std::uint64_t>(id) + static_cast<std::uint64_t>(d) * a.bytes;
      batch.push_back({a.write ? hal::TransferOp::kWrite : hal::TransferOp::kRead, c.peer, kClientKey, off,
                       kServerKey, off, a.bytes});
    }
    std::vector<double> mine;
    while (Clock::now() < end) {
      const auto t0 = Clock::now();
      auto res = c.t->transfer(batch);
      mine.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      for (const auto& r : res) {
        (r.error == 0 ? ops : failed)++;
        // The first failure says why; the count says how often.
        if (r.error != 0 && failed == 1) std::fprintf(stderr, "fabric_peer: a request failed: %s\n", r.message.c_str());
      }
    }
    std::lock_guard guard(lat_mu);
    latencies.insert(latencies.end(), mine.begin(), mine.end());
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < a.threads; ++i) threads.emplace_back(worker, i);
  for (auto& th : threads) th.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(latencies.begin(), latencies.end());
  const double p50 = latencies.empty() ? 0 : latencies[latencies.size() / 2];
  // Retries and checksum mismatches: a run that reached its rate by
  // sending chunks twice, or that caught torn bytes, says so.
  const auto s = c.t->stats();
  std::printf("ops=%llu failed=%llu gbytes_per_s=%.3f batch_p50_us=%.1f depth=%d retried_chunks=%llu "
              "checksum_mismatches=%llu\n",
              (unsigned long long)ops.load(), (unsigned long long)failed.load(),
              static_cast<double>(ops.load() * a.bytes) / secs / 1e9, p50, depth,
              (unsigned long long)s.chunks_retried, (unsigned long long)s.checksum_mismatches);
  return failed == 0 ? 0 : 1;
}

int tcp_serve(const Args& a) {
  if (a.positional.size() != 3) return 2;
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(a.positional[1])));
  ::inet_pton(AF_INET, a.positional[0].c_str(), &addr.sin_addr);
  if (::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(s, 4) != 0) return 1;
  const std::size_t reply = std::stoul(a.positional[2]);
  std::printf("ready\n");
  std::fflush(stdout);
  const int c = ::accept(s, nullptr, nullptr);
  ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::vector<char> buf(reply, 'x');
  char req[16];
  while (::recv(c, req, sizeof(req), MSG_WAITALL) == sizeof(req)) {
    if (::send(c, buf.data(), buf.size(), 0) != static_cast<ssize_t>(buf.size())) break;
  }
  return 0;
}

// A 16-byte request answered by BYTES bytes, COUNT times: the round trip a
// one-sided read of BYTES replaces.
int tcp_rtt(const Args& a) {
  if (a.positional.size() != 4) return 2;
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(a.positional[1])));
  ::inet_pton(AF_INET, a.positional[0].c_str(), &addr.sin_addr);
  for (int i = 0; ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0; ++i) {
    if (i > 100) return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const std::size_t reply = std::stoul(a.positional[2]);
  const int count = std::stoi(a.positional[3]);
  std::vector<char> buf(reply);
  char req[16] = {};
  std::vector<double> lat;
  for (int i = 0; i < count; ++i) {
    const auto t0 = Clock::now();
    if (::send(s, req, sizeof(req), 0) != sizeof(req)) return 1;
    if (::recv(s, buf.data(), buf.size(), MSG_WAITALL) != static_cast<ssize_t>(reply)) return 1;
    lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(lat.begin(), lat.end());
  std::printf("p50_us=%.1f\n", lat[lat.size() / 2]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: fabric_peer serve|verify|bench [--rails IP,IP] [--provider P] [--no-shm] [--host-id ID]\n"
                 "         [--chunk BYTES] [--timeout-ms MS] [--card FILE] [--region-mib N] [--seconds S]\n"
                 "         [--threads N] [--bytes N] [--max-bytes N] [--depth N] [--write]\n"
                 "       fabric_peer tcp-serve IP PORT BYTES | tcp-rtt IP PORT BYTES COUNT\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (a.mode == "serve") return serve(a);
  if (a.mode == "verify") return verify(a);
  if (a.mode == "bench") return bench(a);
  if (a.mode == "tcp-serve") return tcp_serve(a);
  if (a.mode == "tcp-rtt") return tcp_rtt(a);
  return 2;
}
