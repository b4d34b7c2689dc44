// SPDX-License-Identifier: Apache-2.0
// Small UDP/TCP endpoints for tests/bench/net_bench.sh, which runs them in
// network namespaces on both sides of a path (the pooled NIC or a direct
// veth) and compares.
//
//   net_bench udp-echo IP PORT                 echo datagrams until killed
//   net_bench udp-rtt  IP PORT COUNT SIZE      ping-pong; prints p50/p99/mean µs
//   net_bench udp-sink IP PORT                 count datagrams until 1 s of silence; prints Mbit/s
//   net_bench udp-send IP PORT SECONDS SIZE    send as fast as the socket takes
//   net_bench tcp-sink IP PORT                 accept one connection, read to EOF; prints Mbit/s and
//                                              the longest time without data (max_gap_ms)
//   net_bench tcp-send IP PORT SECONDS         write as fast as TCP takes
//   net_bench udp-stream IP PORT SECONDS RATE [EVENT_S]
//                                              send RATE numbered datagrams/s to a udp-echo, take the
//                                              echoes; prints sent, received and the longest time
//                                              without an echo (max_gap_ms): the failover gap; gaps
//                                              that start in the first 0.5 s (ARP, warm-up) do not count;
//                                              with EVENT_S, also the longest gap ending within 1 s after
//                                              EVENT_S seconds (event_gap_ms: the failover's own gap,
//                                              apart from scheduling noise elsewhere in the run)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in address(const char* ip, const char* port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::atoi(port)));
  if (::inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
    std::fprintf(stderr, "net_bench: bad address %s\n", ip);
    std::exit(2);
  }
  return a;
}

int open_socket(int type) {
  const int fd = ::socket(AF_INET, type, 0);
  const int bytes = 8 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof(bytes));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  return fd;
}

void must(bool ok, const char* what) {
  if (ok) return;
  std::perror(what);
  std::exit(1);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int udp_echo(const sockaddr_in& at) {
  const int fd = open_socket(SOCK_DGRAM);
  must(::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof(at)) == 0, "bind");
  std::vector<char> buf(65536);
  for (;;) {
    sockaddr_in from{};
    socklen_t len = sizeof(from);
    const ssize_t n = ::recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n >= 0) ::sendto(fd, buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), len);
  }
}

int udp_rtt(const sockaddr_in& to, int count, size_t size) {
  const int fd = open_socket(SOCK_DGRAM);
  must(::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) == 0, "connect");
  std::vector<char> out(size, 'x'), in(65536);
  std::vector<double> us;
  int lost = 0;
  // The first exchanges resolve ARP and warm both paths; not counted.
  for (int i = -100; i < count; ++i) {
    const auto t = Clock::now();
    must(::send(fd, out.data(), size, 0) == static_cast<ssize_t>(size), "send");
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) != 1 || ::recv(fd, in.data(), in.size(), 0) < 0) {
      ++lost;
      continue;
    }
    if (i >= 0) us.push_back(seconds_since(t) * 1e6);
  }
  std::sort(us.begin(), us.end());
  if (us.empty()) return 1;
  double mean = 0;
  for (double v : us) mean += v;
  mean /= static_cast<double>(us.size());
  std::printf("{\"samples\": %zu, \"lost\": %d, \"p50_us\": %.1f, \"p99_us\": %.1f, \"mean_us\": %.1f}\n", us.size(),
              lost, us[us.size() / 2], us[us.size() * 99 / 100], mean);
  return 0;
}

int udp_sink(const sockaddr_in& at) {
  const int fd = open_socket(SOCK_DGRAM);
  must(::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof(at)) == 0, "bind");
  std::vector<char> buf(65536);
  uint64_t bytes = 0, datagrams = 0;
  Clock::time_point first{}, last{};
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, datagrams == 0 ? 30000 : 1000) != 1) break;
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0) continue;
    if (datagrams++ == 0) first = Clock::now();
    last = Clock::now();
    bytes += static_cast<uint64_t>(n);
  }
  const double s = std::chrono::duration<double>(last - first).count();
  std::printf("{\"datagrams\": %llu, \"bytes\": %llu, \"mbit_s\": %.1f}\n", static_cast<unsigned long long>(datagrams),
              static_cast<unsigned long long>(bytes), s > 0 ? bytes * 8 / s / 1e6 : 0.0);
  return 0;
}

int udp_send(const sockaddr_in& to, double seconds, size_t size) {
  const int fd = open_socket(SOCK_DGRAM);
  must(::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) == 0, "connect");
  std::vector<char> out(size, 'u');
  uint64_t sent = 0;
  const auto start = Clock::now();
  while (seconds_since(start) < seconds) {
    if (::send(fd, out.data(), size, 0) > 0) ++sent;
  }
  std::printf("{\"datagrams_sent\": %llu}\n", static_cast<unsigned long long>(sent));
  return 0;
}

int tcp_sink(const sockaddr_in& at) {
  const int listener = open_socket(SOCK_STREAM);
  must(::bind(listener, reinterpret_cast<const sockaddr*>(&at), sizeof(at)) == 0, "bind");
  must(::listen(listener, 1) == 0, "listen");
  const int fd = ::accept(listener, nullptr, nullptr);
  must(fd >= 0, "accept");
  std::vector<char> buf(1 << 20);
  uint64_t bytes = 0;
  const auto start = Clock::now();
  auto last = start;
  double max_gap = 0, max_gap_at = 0;
  for (;;) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    const auto now = Clock::now();
    if (bytes > 0 && std::chrono::duration<double>(now - last).count() > max_gap) {
      max_gap = std::chrono::duration<double>(now - last).count();
      max_gap_at = std::chrono::duration<double>(last - start).count();
    }
    last = now;
    bytes += static_cast<uint64_t>(n);
  }
  const double s = seconds_since(start);
  std::printf("{\"bytes\": %llu, \"seconds\": %.2f, \"mbit_s\": %.1f, \"max_gap_ms\": %.1f, \"gap_at_s\": %.2f}\n",
              static_cast<unsigned long long>(bytes), s, bytes * 8 / s / 1e6, max_gap * 1e3, max_gap_at);
  return 0;
}

int tcp_send(const sockaddr_in& to, double seconds) {
  const int fd = open_socket(SOCK_STREAM);
  must(::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) == 0, "connect");
  std::vector<char> out(1 << 20, 't');
  const auto start = Clock::now();
  while (seconds_since(start) < seconds) {
    if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) <= 0) break;
  }
  ::close(fd);
  return 0;
}

int udp_stream(const sockaddr_in& to, double seconds, double rate, double event) {
  const int fd = open_socket(SOCK_DGRAM);
  must(::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) == 0, "connect");
  char out[64] = {}, in[2048];
  uint64_t sent = 0, received = 0;
  const auto start = Clock::now();
  const auto period = std::chrono::duration<double>(1.0 / rate);
  auto last = start;
  double max_gap = 0, max_gap_at = 0, event_gap = 0;
  // Echoes that come in after the last send: a second's grace.
  while (seconds_since(start) < seconds + 1.0) {
    const auto due = start + std::chrono::duration_cast<Clock::duration>(period * static_cast<double>(sent));
    if (seconds_since(start) < seconds && Clock::now() >= due) {
      std::memcpy(out, &sent, sizeof(sent));
      if (::send(fd, out, sizeof(out), 0) > 0) ++sent;
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    const timespec wait{0, 20'000};
    if (::ppoll(&p, 1, &wait, nullptr) != 1) continue;
    while (::recv(fd, in, sizeof(in), MSG_DONTWAIT) > 0) {
      const auto now = Clock::now();
      if (received > 0 && std::chrono::duration<double>(last - start).count() >= 0.5) {
        const double gap = std::chrono::duration<double>(now - last).count();
        const double ended = std::chrono::duration<double>(now - start).count();
        if (event >= 0 && ended >= event && ended <= event + 1.0) event_gap = std::max(event_gap, gap);
        if (gap > max_gap) {
          max_gap = gap;
          max_gap_at = std::chrono::duration<double>(last - start).count();
        }
      }
      last = now;
      ++received;
    }
  }
  std::printf("{\"sent\": %llu, \"received\": %llu, \"lost\": %lld, \"max_gap_ms\": %.1f, \"gap_at_s\": %.2f",
              static_cast<unsigned long long>(sent), static_cast<unsigned long long>(received),
              static_cast<long long>(sent - received), max_gap * 1e3, max_gap_at);
  if (event >= 0) std::printf(", \"event_gap_ms\": %.1f", event_gap * 1e3);
  std::printf("}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: net_bench udp-echo|udp-rtt|udp-sink|udp-send|tcp-sink|tcp-send|udp-stream IP PORT ...\n");
    return 2;
  }
  const std::string mode = argv[1];
  const sockaddr_in a = address(argv[2], argv[3]);
  if (mode == "udp-echo") return udp_echo(a);
  if (mode == "udp-rtt" && argc == 6) return udp_rtt(a, std::atoi(argv[4]), static_cast<size_t>(std::atoi(argv[5])));
  if (mode == "udp-sink") return udp_sink(a);
  if (mode == "udp-send" && argc == 6) return udp_send(a, std::atof(argv[4]), static_cast<size_t>(std::atoi(argv[5])));
  if (mode == "tcp-sink") return tcp_sink(a);
  if (mode == "tcp-send" && argc == 5) return tcp_send(a, std::atof(argv[4]));
  if (mode == "udp-stream" && (argc == 6 || argc == 7)) {
    return udp_stream(a, std::atof(argv[4]), std::atof(argv[5]), argc == 7 ? std::atof(argv[6]) : -1.0);
  }
  std::fprintf(stderr, "net_bench: bad arguments for %s\n", mode.c_str());
  return 2;
}
