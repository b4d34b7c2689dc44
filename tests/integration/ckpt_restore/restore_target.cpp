// SPDX-License-Identifier: Apache-2.0
// A process to checkpoint and restore: `restore_target MODE [ARG]` sets up
// the state MODE exercises, prints "checkpoint", waits for a byte on stdin
// (where the test checkpoints it), then prints what it sees of that state.
// An uninterrupted run and a restored clone must print the same after the
// "checkpoint" line (or, for the MADV_DONTNEED modes, what docs/ckpt.md says
// the policy changes).
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void wait_for_checkpoint() {
  std::printf("checkpoint\n");
  std::fflush(stdout);
  char c;
  while (::read(0, &c, 1) < 0) {
  }
}

uint64_t checksum(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Four threads that built state (stack, TLS, heap) before the checkpoint and
// finish their work after it, each named (one with the longest name a
// thread may have, one with a newline in it); after it they print the names
// the kernel holds for them.
thread_local uint64_t tls_value;
pthread_barrier_t barrier;
uint64_t results[4];
pid_t tids[4];
char names[4][16];
const char* const kThreadNames[4] = {"worker-0", "fifteen-bytes:1", "w2\nnewline", "w3"};

void* worker(void* arg) {
  const long id = reinterpret_cast<long>(arg);
  tids[id] = static_cast<pid_t>(::syscall(SYS_gettid));
  tls_value = 1000 + id;
  uint64_t acc = static_cast<uint64_t>(id);
  for (int i = 0; i < 1000; ++i) acc = acc * 6364136223846793005ull + 1442695040888963407ull;
  double fp = 1.0 + id;  // FPU state across the checkpoint
  pthread_barrier_wait(&barrier);  // the checkpoint happens while threads wait here
  pthread_barrier_wait(&barrier);
  for (int i = 0; i < 1000; ++i) fp = fp * 1.000001 + 0.25;
  const bool same_tid = tids[id] == static_cast<pid_t>(::syscall(SYS_gettid));
  results[id] = acc ^ tls_value ^ static_cast<uint64_t>(fp * 1000) ^ (same_tid ? 0 : 0xdead);
  char name[16] = {};
  ::prctl(PR_GET_NAME, name);
  std::snprintf(names[id], sizeof names[id], "%s", name);
  return nullptr;
}

int mode_threads() {
  pthread_barrier_init(&barrier, nullptr, 5);
  pthread_t t[4];
  for (long i = 0; i < 4; ++i) {
    pthread_create(&t[i], nullptr, worker, reinterpret_cast<void*>(i));
    pthread_setname_np(t[i], kThreadNames[i]);
  }
  pthread_barrier_wait(&barrier);
  wait_for_checkpoint();
  pthread_barrier_wait(&barrier);
  for (auto& th : t) pthread_join(th, nullptr);
  for (int i = 0; i < 4; ++i) std::printf("thread %d result %016llx\n", i, static_cast<unsigned long long>(results[i]));
  for (int i = 0; i < 4; ++i) std::printf("thread %d named %s\n", i, names[i]);
  char leader[16] = {};
  ::prctl(PR_GET_NAME, leader);
  std::printf("leader named %s\n", leader);
  std::printf("pid %s\n", getpid() == static_cast<pid_t>(::syscall(SYS_gettid)) ? "is the leader" : "differs");
  return 0;
}

volatile sig_atomic_t usr1_count, alarm_count;

int mode_signals() {
  signal(SIGUSR1, [](int) { usr1_count = usr1_count + 1; });
  signal(SIGALRM, [](int) { alarm_count = alarm_count + 1; });
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, nullptr);
  raise(SIGUSR1);
  itimerval it{{0, 0}, {2, 0}};  // fires after the restore
  setitimer(ITIMER_REAL, &it, nullptr);
  wait_for_checkpoint();
  sigset_t pending;
  sigpending(&pending);
  std::printf("usr1 pending %d, handled %d\n", sigismember(&pending, SIGUSR1), static_cast<int>(usr1_count));
  sigprocmask(SIG_UNBLOCK, &usr1, nullptr);
  std::printf("usr1 handled after unblock %d\n", static_cast<int>(usr1_count));
  itimerval left{};
  getitimer(ITIMER_REAL, &left);
  std::printf("itimer armed %d\n", left.it_value.tv_sec > 0 || left.it_value.tv_usec > 0);
  for (int i = 0; i < 500 && alarm_count == 0; ++i) usleep(10000);
  std::printf("alarm handled %d\n", static_cast<int>(alarm_count));
  return 0;
}

int mode_rseq() {
  wait_for_checkpoint();
  // glibc registered rseq for this thread; after a restore the kernel must
  // keep updating the same area, so its cpu id agrees with getcpu.
  if (__rseq_size == 0) {
    std::printf("rseq not registered by libc\n");
    return 0;
  }
  auto* area = reinterpret_cast<volatile rseq*>(static_cast<char*>(__builtin_thread_pointer()) + __rseq_offset);
  bool agree = true;
  for (int i = 0; i < 50; ++i) {
    unsigned cpu = 0;
    ::syscall(SYS_getcpu, &cpu, nullptr, nullptr);
    const unsigned seen = area->cpu_id;
    if (seen != cpu && static_cast<unsigned>(area->cpu_id) != cpu) agree = false;
    sched_yield();
  }
  std::printf("rseq cpu id follows getcpu %d\n", agree);
  std::printf("sched_getcpu valid %d\n", sched_getcpu() >= 0);
  return 0;
}

int mode_vdso() {
  timespec before{}, after{};
  clock_gettime(CLOCK_MONOTONIC, &before);
  wait_for_checkpoint();
  clock_gettime(CLOCK_MONOTONIC, &after);
  timespec real{};
  clock_gettime(CLOCK_REALTIME, &real);
  const long now = time(nullptr);
  std::printf("monotonic moves on %d\n", after.tv_sec > before.tv_sec ||
                                             (after.tv_sec == before.tv_sec && after.tv_nsec >= before.tv_nsec));
  std::printf("realtime agrees with time() %d\n", real.tv_sec - now <= 1 && now - real.tv_sec <= 1);
  return 0;
}

int mode_file(const char* path) {
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) return 2;
  ::lseek(fd, 100, SEEK_SET);
  char first[11] = {};
  if (::read(fd, first, 10) != 10) return 3;
  wait_for_checkpoint();
  char next[11] = {};
  if (::read(fd, next, 10) != 10) return 4;
  std::printf("read at 110: %s (offset now %ld)\n", next, static_cast<long>(::lseek(fd, 0, SEEK_CUR)));
  return 0;
}

constexpr size_t kPages = 16, kPage = 4096;

int mode_dontneed() {
  auto* p = static_cast<unsigned char*>(mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  std::memset(p, 0x5a, kPages * kPage);
  madvise(p + 4 * kPage, 8 * kPage, MADV_DONTNEED);  // dropped before: zeros in every policy
  wait_for_checkpoint();
  std::printf("after dontneed before the checkpoint %016llx\n",
              static_cast<unsigned long long>(checksum(p, kPages * kPage)));
  return 0;
}

// MADV_DONTNEED after the restore, on a page that came from the image.
int mode_dontneed_after() {
  auto* p = static_cast<unsigned char*>(mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  std::memset(p, 0x5a, 2 * kPage);
  wait_for_checkpoint();
  madvise(p, kPage, MADV_DONTNEED);
  const int free_result = madvise(p + kPage, kPage, MADV_FREE);
  std::printf("anonymous page after MADV_DONTNEED reads %02x\n", p[0]);
  std::printf("MADV_FREE %s\n", free_result == 0 ? "accepted" : "refused");
  return 0;
}

// A MAP_PRIVATE file mapping refills from the file after MADV_DONTNEED.
int mode_file_dontneed(const char* path) {
  const int fd = ::open(path, O_RDONLY);
  auto* p = static_cast<unsigned char*>(mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
  ::close(fd);
  p[0] = 'X';  // a private copy of the page: part of the checkpoint
  wait_for_checkpoint();
  std::printf("file page before MADV_DONTNEED %c\n", p[0]);
  madvise(p, kPage, MADV_DONTNEED);
  std::printf("file page after MADV_DONTNEED %c\n", p[0]);
  return 0;
}

int mode_sparse() {
  constexpr size_t kBytes = 4ull << 30, kStride = 1 << 20;
  auto* p = static_cast<unsigned char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  for (size_t off = 0; off < kBytes; off += kStride) p[off] = static_cast<unsigned char>(off / kStride);
  wait_for_checkpoint();
  uint64_t sum = 0;
  for (size_t off = 0; off < kBytes; off += kStride) sum = sum * 31 + p[off];
  std::printf("sparse heap sum %016llx\n", static_cast<unsigned long long>(sum));
  return 0;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// For clones of one checkpoint: 64 pages written before it, then (after
// the restore) "shared at ADDR"; once FILE.write exists one page is written
// ("wrote"), and once FILE.exit exists the clone exits.
int mode_share(const char* file) {
  constexpr size_t kSharePages = 64;
  auto* p = static_cast<unsigned char*>(mmap(nullptr, kSharePages * kPage, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  for (size_t i = 0; i < kSharePages * kPage; ++i) p[i] = static_cast<unsigned char>(i * 7);
  wait_for_checkpoint();
  unsigned sum = 0;
  for (size_t i = 0; i < kSharePages * kPage; i += kPage) sum += p[i + 1];  // read, not written: still shared
  std::printf("shared at %p\n", static_cast<void*>(p));
  if (sum == 0) std::printf("no data\n");
  std::fflush(stdout);
  const std::string base = file;
  while (!exists(base + ".write")) usleep(5000);
  p[0] = 1;
  std::printf("wrote\n");
  std::fflush(stdout);
  while (!exists(base + ".exit")) usleep(5000);
  return 0;
}

// The permissions maps shows for the VMA starting at `at`.
std::string perms_at(const void* at) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return "unknown";
  char line[512];
  std::string found = "not a VMA start";
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long start = 0, end = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3 && start == reinterpret_cast<unsigned long>(at))
      found = perms;
  }
  std::fclose(maps);
  return found;
}

// Shared anonymous memory: 16 pages, split in three VMAs by mprotect, the
// object mapped a second time elsewhere, two pages never touched. After the
// restore the data must be there, the two mappings one object, and a child
// forked then must share it.
int mode_shmem() {
  constexpr size_t kShmPages = 16, kBytes = kShmPages * kPage;
  auto* p = static_cast<unsigned char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) return 2;
  for (size_t i = 0; i < kBytes; ++i) p[i] = static_cast<unsigned char>(i * 13 + 5);
  std::memset(p + 10 * kPage, 0, 2 * kPage);
  madvise(p + 10 * kPage, 2 * kPage, MADV_REMOVE);  // holes in the object: read back as zeros
  auto* alias = static_cast<unsigned char*>(mremap(p, 0, kBytes, MREMAP_MAYMOVE));
  if (alias == MAP_FAILED) return 3;
  mprotect(p + 4 * kPage, 4 * kPage, PROT_READ);
  wait_for_checkpoint();
  std::printf("shared anonymous data %016llx\n", static_cast<unsigned long long>(checksum(p, kBytes)));
  std::printf("alias data %016llx\n", static_cast<unsigned long long>(checksum(alias, kBytes)));
  alias[1] = 0x42;
  alias[12 * kPage + 3] = 0x43;
  std::printf("written through the alias reads %02x %02x\n", p[1], p[12 * kPage + 3]);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    p[2] = 0x44;
    alias[13 * kPage] = 0x45;
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("a child's writes read %02x %02x (child exit %d)\n", p[2], p[13 * kPage],
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  std::printf("the read-only part is %s\n", perms_at(p + 4 * kPage).c_str());
  return 0;
}

// Shared anonymous memory another process maps too: a checkpoint refuses it.
int mode_shmem_forked() {
  auto* p = static_cast<unsigned char*>(mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) return 2;
  p[0] = 1;
  const pid_t child = fork();
  if (child == 0) {
    while (p[0] == 1) usleep(5000);
    _exit(0);
  }
  std::printf("sharer %d\n", static_cast<int>(child));
  wait_for_checkpoint();
  p[0] = 0;
  waitpid(child, nullptr, 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const char* arg = argc > 2 ? argv[2] : "";
  if (mode == "threads") return mode_threads();
  if (mode == "signals") return mode_signals();
  if (mode == "rseq") return mode_rseq();
  if (mode == "vdso") return mode_vdso();
  if (mode == "file") return mode_file(arg);
  if (mode == "dontneed") return mode_dontneed();
  if (mode == "dontneed-after") return mode_dontneed_after();
  if (mode == "file-dontneed") return mode_file_dontneed(arg);
  if (mode == "sparse") return mode_sparse();
  if (mode == "share") return mode_share(arg);
  if (mode == "shmem") return mode_shmem();
  if (mode == "shmem-forked") return mode_shmem_forked();
  std::fprintf(stderr, "restore_target: unknown mode '%s'\n", mode.c_str());
  return 64;
}
