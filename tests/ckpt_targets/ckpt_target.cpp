// SPDX-License-Identifier: Apache-2.0
// A process for checkpoint tests to checkpoint (and restore): it sets up the
// state of one MODE, prints what it knows about itself as "key value" lines
// and "ready" on stdout, then serves commands read from stdin:
//   report   print "counter N", "digest HEX" (a checksum of the mode's
//            memory), the mode's own lines, then "done"
//   exit     exit 0
// so a test compares the checkpoint with the process's own view, and a
// restored clone's reports with the original's.
//
//   ckpt_target loop                 the main thread spins in user space
//   ckpt_target threads              four threads: spinning, blocked on a
//                                    condition variable, sleeping (counted
//                                    in "sleeps"), and main; named spin,
//                                    wait and sleep
//   ckpt_target signals              SIGUSR1 pending for the thread and
//                                    SIGUSR2 for the process, both blocked;
//                                    SIGALRM handled on an alternate stack,
//                                    ITIMER_REAL armed
//   ckpt_target rseq                 reports glibc's rseq area
//   ckpt_target vdso                 a thread calls clock_gettime (vDSO) in
//                                    a loop, checking time never goes back
//   ckpt_target file PATH OFFSET     PATH open read-only at OFFSET
//   ckpt_target dontneed             64 written pages, every other one
//                                    dropped with MADV_DONTNEED
//   ckpt_target sparse               1 GiB of heap, one page in 256 written
//   ckpt_target shared-region        a writable MAP_SHARED memfd of 64 KiB
//                                    ("region ADDR BYTES"): refused unless
//                                    the checkpoint is told it is a region
//   ckpt_target socket               one end of a socketpair at "socket_fd",
//                                    inode "socket_ino": refused unless it
//                                    is named as the cxlpool socket
//   ckpt_target fd-objects           holds a semaphore eventfd (counter 7), a pipe with "hello"
//                                    in it (both ends) and a datagram socketpair
//                                    ("eventfd FD", "pipe R W", "pair A B")
//   ckpt_target listeners PATH       a non-blocking seqpacket listener on an abstract
//                                    name with a NUL inside (backlog 7) and a
//                                    stream listener bound to PATH (backlog 5)
//                                    ("abstract FD NAME-IN-HEX", "path FD")
//   ckpt_target refuse-listener-queued  a listener with a connection it has
//                                    not accepted (refused)
//   ckpt_target refuse-epoll         holds an epoll instance (a checkpoint refuses)
//   ckpt_target refuse-lone-pipe     holds only the read end of a pipe (refused)
//   ckpt_target refuse-timer         has a POSIX timer (refused)
//   ckpt_target refuse-shared        a writable MAP_SHARED memfd (refused)
//
// Every mode also writes a 256 KiB pattern on the heap ("pattern ADDR") and
// sets umask 027.
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kPatternBytes = 256 * 1024;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kSparseBytes = 1ull << 30;
constexpr std::size_t kSparseStride = 256 * kPage;
constexpr std::size_t kDontneedPages = 64;

std::atomic<uint64_t> g_counter{0};
std::atomic<uint64_t> g_alarms{0};
std::atomic<uint64_t> g_sleeps{0};
std::atomic<bool> g_clock_went_back{false};
uint8_t* g_pattern = nullptr;
uint8_t* g_region = nullptr;  // dontneed or sparse memory
std::size_t g_region_bytes = 0;
int g_file_fd = -1;
int g_listeners[2] = {-1, -1};  // listeners: abstract seqpacket, path stream

std::string hex_bytes(const char* p, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned char>(p[i]);
    out += "0123456789abcdef"[b >> 4];
    out += "0123456789abcdef"[b & 15];
  }
  return out;
}

// A listener's name in hex and whether a connection to that name is
// accepted by it: "NAME:accepted", else what failed.
std::string probe_listener(int fd, int type) {
  int on = 0;
  socklen_t optlen = sizeof on;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &optlen) != 0 || !on) return "not-listening";
  sockaddr_un a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "no-name";
  std::string out = hex_bytes(a.sun_path, len - offsetof(sockaddr_un, sun_path));
  const int c = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  // A unix connect is queued at once: the accept does not wait.
  const int s = c >= 0 && connect(c, reinterpret_cast<sockaddr*>(&a), len) == 0 ? accept4(fd, nullptr, nullptr, 0) : -1;
  out += s >= 0 ? ":accepted" : ":refused";
  if (s >= 0) close(s);
  if (c >= 0) close(c);
  return out;
}
pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
std::vector<pid_t> g_tids;
std::atomic<int> g_started{0};

void line(const char* key, const std::string& value) { std::printf("%s %s\n", key, value.c_str()); }
std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}
pid_t gettid_now() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

uint64_t fnv(const uint8_t* p, std::size_t n, uint64_t h = 1469598103934665603ull) {
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void* spin_thread(void*) {
  g_tids[1] = gettid_now();
  ++g_started;
  for (;;) g_counter.fetch_add(1, std::memory_order_relaxed);
}

void* wait_thread(void*) {
  g_tids[2] = gettid_now();
  pthread_mutex_lock(&g_mutex);
  ++g_started;
  for (;;) pthread_cond_wait(&g_cond, &g_mutex);
}

void* sleep_thread(void*) {
  g_tids[3] = gettid_now();
  ++g_started;
  for (;;) {
    timespec ts{0, 5 * 1000 * 1000};
    nanosleep(&ts, nullptr);
    g_sleeps.fetch_add(1, std::memory_order_relaxed);
  }
}

void* clock_thread(void*) {
  ++g_started;
  timespec last{};
  clock_gettime(CLOCK_MONOTONIC, &last);
  for (;;) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec < last.tv_sec || (now.tv_sec == last.tv_sec && now.tv_nsec < last.tv_nsec)) g_clock_went_back = true;
    last = now;
    g_counter.fetch_add(1, std::memory_order_relaxed);
  }
}

void on_alarm(int) { g_alarms.fetch_add(1, std::memory_order_relaxed); }

void start(void* (*fn)(void*), const char* name = nullptr) {
  pthread_t t;
  if (pthread_create(&t, nullptr, fn, nullptr) != 0) std::abort();
  if (name != nullptr) pthread_setname_np(t, name);
}

void setup_signals() {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigaddset(&block, SIGUSR2);
  sigprocmask(SIG_BLOCK, &block, nullptr);
  raise(SIGUSR1);                    // pending for this thread
  kill(getpid(), SIGUSR2);           // pending for the process
  static std::vector<uint8_t> alt(64 * 1024);
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART | SA_ONSTACK;
  sigaction(SIGALRM, &sa, nullptr);
  itimerval it{{0, 250000}, {0, 250000}};
  setitimer(ITIMER_REAL, &it, nullptr);
  line("sigmask", hex((1ull << (SIGUSR1 - 1)) | (1ull << (SIGUSR2 - 1))));
  line("alarm_handler", hex(reinterpret_cast<uint64_t>(&on_alarm)));
  line("altstack", hex(reinterpret_cast<uint64_t>(alt.data())) + " " + std::to_string(alt.size()));
  line("itimer_interval_us", "250000");
}

int setup(const std::string& mode, int argc, char** argv) {
  if (mode == "loop" || mode == "rseq") {
    // The main thread spins between commands (see serve()).
  } else if (mode == "threads") {
    g_tids.assign(4, 0);
    g_tids[0] = gettid_now();
    start(spin_thread, "spin");
    start(wait_thread, "wait");
    start(sleep_thread, "sleep");
    while (g_started < 3) usleep(1000);
    std::string tids;
    for (pid_t t : g_tids) tids += (tids.empty() ? "" : " ") + std::to_string(t);
    line("tids", tids);
  } else if (mode == "signals") {
    setup_signals();
  } else if (mode == "vdso") {
    start(clock_thread);
    while (g_started < 1) usleep(1000);
  } else if (mode == "file") {
    if (argc < 4) return 2;
    g_file_fd = open(argv[2], O_RDONLY | O_CLOEXEC);
    if (g_file_fd < 0 || lseek(g_file_fd, std::atoll(argv[3]), SEEK_SET) < 0) return 1;
    line("file_fd", std::to_string(g_file_fd));
  } else if (mode == "dontneed") {
    g_region_bytes = kDontneedPages * kPage;
    g_region = static_cast<uint8_t*>(mmap(nullptr, g_region_bytes, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    for (std::size_t i = 0; i < g_region_bytes; ++i) g_region[i] = static_cast<uint8_t>(i / kPage + 1);
    for (std::size_t p = 1; p < kDontneedPages; p += 2) madvise(g_region + p * kPage, kPage, MADV_DONTNEED);
    line("region", hex(reinterpret_cast<uint64_t>(g_region)) + " " + std::to_string(g_region_bytes));
  } else if (mode == "sparse") {
    g_region_bytes = kSparseBytes;
    g_region = static_cast<uint8_t*>(mmap(nullptr, g_region_bytes, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    for (std::size_t at = 0; at < g_region_bytes; at += kSparseStride) g_region[at] = static_cast<uint8_t>(at >> 20);
    line("region", hex(reinterpret_cast<uint64_t>(g_region)) + " " + std::to_string(g_region_bytes));
    line("stride", std::to_string(kSparseStride));
  } else if (mode == "shared-region") {
    const int fd = memfd_create("region", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, 16 * kPage) != 0) return 1;
    void* p = mmap(nullptr, 16 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return 1;
    std::memset(p, 0x5c, 16 * kPage);
    line("region", hex(reinterpret_cast<uint64_t>(p)) + " " + std::to_string(16 * kPage));
  } else if (mode == "socket") {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 1;
    struct stat st {};
    fstat(sv[0], &st);
    line("socket_fd", std::to_string(sv[0]));
    line("socket_ino", std::to_string(st.st_ino));
    close(sv[1]);
  } else if (mode == "fd-objects") {
    const int efd = eventfd(7, EFD_SEMAPHORE | EFD_NONBLOCK);
    int p[2], sv[2];
    if (efd < 0 || pipe2(p, O_CLOEXEC) != 0 || socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0) return 1;
    if (write(p[1], "hello", 5) != 5) return 1;
    line("eventfd", std::to_string(efd));
    line("pipe", std::to_string(p[0]) + " " + std::to_string(p[1]));
    line("pair", std::to_string(sv[0]) + " " + std::to_string(sv[1]));
  } else if (mode == "listeners" || mode == "refuse-listener-queued") {
    // Abstract: NUL, text, NUL, text (the NULs are part of the name).
    const std::string name = std::string("\0ckpt-target-", 13) + std::to_string(getpid()) + std::string("\0b", 2);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, name.data(), name.size());
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
    if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(s, 7) != 0) return 1;
    if (mode == "refuse-listener-queued") {
      const int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
      if (c < 0 || connect(c, reinterpret_cast<sockaddr*>(&a), len) != 0) return 1;
      line("listener", std::to_string(s));
    } else {
      line("abstract", std::to_string(s) + " " + hex_bytes(name.data(), name.size()));
      sockaddr_un pa{};
      pa.sun_family = AF_UNIX;
      if (argc < 3 || std::strlen(argv[2]) >= sizeof pa.sun_path) return 1;
      std::strcpy(pa.sun_path, argv[2]);
      const int ps = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (ps < 0 || bind(ps, reinterpret_cast<sockaddr*>(&pa), sizeof pa) != 0 || listen(ps, 5) != 0) return 1;
      line("path", std::to_string(ps));
      g_listeners[0] = s;
      g_listeners[1] = ps;
    }
  } else if (mode == "refuse-epoll") {
    line("epoll", std::to_string(epoll_create1(EPOLL_CLOEXEC)));
  } else if (mode == "refuse-lone-pipe") {
    int p[2];
    if (pipe(p) != 0) return 1;
    close(p[1]);
    line("pipe", std::to_string(p[0]));
  } else if (mode == "refuse-timer") {
    timer_t timer;
    sigevent sev{};
    sev.sigev_notify = SIGEV_NONE;
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) return 1;
  } else if (mode == "refuse-shared") {
    const int fd = memfd_create("shared", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, kPage) != 0) return 1;
    void* p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return 1;
  } else {
    std::fprintf(stderr, "ckpt_target: unknown mode %s\n", mode.c_str());
    return 2;
  }
  return 0;
}

void report(const std::string& mode) {
  line("counter", std::to_string(g_counter.load()));
  uint64_t digest = fnv(g_pattern, kPatternBytes);
  if (mode == "dontneed") digest = fnv(g_region, g_region_bytes, digest);
  if (mode == "sparse") {
    for (std::size_t at = 0; at < g_region_bytes; at += kSparseStride) digest = fnv(g_region + at, 1, digest);
  }
  line("digest", hex(digest));
  if (mode == "file") {
    char buf[16] = {};
    const ssize_t n = read(g_file_fd, buf, sizeof buf);
    line("read", std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0));
  }
  if (mode == "listeners") {
    line("listeners", probe_listener(g_listeners[0], SOCK_SEQPACKET) + " " + probe_listener(g_listeners[1], SOCK_STREAM));
  }
  if (mode == "signals") {
    sigset_t pending;
    sigpending(&pending);
    line("pending", std::to_string(sigismember(&pending, SIGUSR1)) + " " + std::to_string(sigismember(&pending, SIGUSR2)));
    line("alarms_seen", g_alarms.load() > 0 ? "1" : "0");
  }
  if (mode == "vdso") line("clock_ok", g_clock_went_back ? "0" : "1");
  if (mode == "threads") line("sleeps", std::to_string(g_sleeps.load()));
  line("pid", std::to_string(getpid()));
  line("tid", std::to_string(gettid_now()));
  std::printf("done\n");
  std::fflush(stdout);
}

// Reads commands; in loop mode the main thread spins in user space between
// polls so a checkpoint usually catches it outside any system call.
int serve(const std::string& mode) {
  std::string pending;
  const bool spin = mode == "loop" || mode == "rseq";
  if (spin) fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  for (;;) {
    char buf[256];
    const ssize_t n = read(0, buf, sizeof buf);
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return 1;
      for (int i = 0; i < 1000000; ++i) g_counter.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      const std::string cmd = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (cmd == "exit") return 0;
      if (cmd == "report") report(mode);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ckpt_target MODE [ARGS]\n");
    return 2;
  }
  const std::string mode = argv[1];
  umask(027);
  g_pattern = static_cast<uint8_t*>(std::malloc(kPatternBytes));
  for (std::size_t i = 0; i < kPatternBytes; ++i) g_pattern[i] = static_cast<uint8_t>((i * 131) ^ (i >> 9));
  line("pid", std::to_string(getpid()));
  line("pattern", hex(reinterpret_cast<uint64_t>(g_pattern)));
  line("brk", hex(reinterpret_cast<uint64_t>(sbrk(0))));
  line("vdso", hex(getauxval(AT_SYSINFO_EHDR)));
  line("rseq", hex(reinterpret_cast<uint64_t>(__builtin_thread_pointer()) + __rseq_offset) + " " +
                   std::to_string(__rseq_size));
  if (const int rc = setup(mode, argc, argv); rc != 0) return rc;
  std::printf("ready\n");
  std::fflush(stdout);
  return serve(mode);
}
