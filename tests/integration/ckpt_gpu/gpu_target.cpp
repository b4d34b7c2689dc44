// SPDX-License-Identifier: Apache-2.0
// ckpt_gpu_target BYTES: the process the CUDA checkpoint test checkpoints. It
// makes the primary context of device 0 current, allocates BYTES of device
// memory, fills it with a pattern through a staging buffer it then unmaps (so
// that only the device holds the pattern), prints
//   ready PID DEVPTR BYTES
// and serves one command per line on stdin:
//   verify  copies the buffer back and compares it with the pattern, then
//           checks a 2 MiB MAP_SHARED|MAP_ANONYMOUS mapping it filled with
//           another pattern before "ready" (the driver makes such mappings;
//           a checkpoint must carry this one too):
//           "verify ok PID BYTES" or "verify mismatch PID at OFFSET: got X want Y"
//           or "verify mismatch PID in shared anonymous memory at OFFSET: ..."
//           or "verify error PID STEP: CUDA_ERROR_..."
//   exit    exits 0 without calling the driver, not even its exit handlers
//           (they would block in a locked process)
//   fds     (with CKPT_GPU_TARGET_FDS=1 only) reads what its own eventfds,
//           pipe and socketpair hold and connects to its own listener:
//           "fds eventfd=N semaphore=R,R pipe=TEXT socketpair=TEXT
//           listener=NAME accepted=TEXT flags=..."
// It talks over fds 0-2 only, which a checkpoint carries as the restorer's
// stdio. With CKPT_GPU_TARGET_FDS=1 in its environment it also holds, like a
// driver might, an eventfd with a counter, a semaphore eventfd, a pipe with
// bytes buffered in it, a unix socketpair (both ends each) and a listening
// seqpacket socket on an abstract name like the driver's own
// ("@cuda-uvmfd-NETNS-PID@", its NULs shown as '@'), and before
// "ready" prints "fds-expect ..." with what "fds" must answer, which a
// restored clone's answer is compared with. It never links the project's CUDA code: it resolves the few driver
// entry points it needs itself, because it is built without sanitizers (a
// sanitized process cannot be restored) and sanitized project libraries do
// not link into such a program.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// The driver's ABI as libcuda.so.1 exports it (CUresult is an int enum,
// CUdevice an int, CUdeviceptr 64 bits); the _v2 names are the 64-bit
// pointer entry points every driver since CUDA 3.2 exports.
using CuInit = int (*)(unsigned);
using CuDeviceGet = int (*)(int*, int);
using CuPrimaryCtxRetain = int (*)(void**, int);
using CuCtxSetCurrent = int (*)(void*);
using CuMemAlloc = int (*)(uint64_t*, size_t);
using CuMemcpyHtoD = int (*)(uint64_t, const void*, size_t);
using CuMemcpyDtoH = int (*)(void*, uint64_t, size_t);
using CuGetErrorName = int (*)(int, const char**);

struct Driver {
  CuInit init = nullptr;
  CuDeviceGet device_get = nullptr;
  CuPrimaryCtxRetain primary_ctx_retain = nullptr;
  CuCtxSetCurrent ctx_set_current = nullptr;
  CuMemAlloc mem_alloc = nullptr;
  CuMemcpyHtoD memcpy_htod = nullptr;
  CuMemcpyDtoH memcpy_dtoh = nullptr;
  CuGetErrorName get_error_name = nullptr;
};

void say(const std::string& line) {
  std::string out = line + "\n";
  const char* p = out.data();
  size_t left = out.size();
  while (left > 0) {
    const ssize_t n = ::write(STDOUT_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(3);
    p += n;
    left -= static_cast<size_t>(n);
  }
}

std::string cu_name(const Driver& d, int result) {
  const char* name = nullptr;
  if (d.get_error_name != nullptr && d.get_error_name(result, &name) == 0 && name != nullptr) return name;
  return "CUresult " + std::to_string(result);
}

template <typename Fn>
bool resolve(void* handle, const char* symbol, Fn* slot, std::string* why) {
  *slot = reinterpret_cast<Fn>(::dlsym(handle, symbol));
  if (*slot == nullptr) *why = std::string("libcuda.so.1 has no ") + symbol;
  return *slot != nullptr;
}

// Word i of the pattern: a 64-bit mix of i, so that a page in the wrong place,
// a zero page or a stale page all differ from it.
uint64_t pattern_word(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// mmap rather than malloc: the staging buffer is gone from the address space
// once unmapped, so a restored pattern can only have come from the device.
uint64_t* map_words(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint64_t*>(p);
}

constexpr size_t kSharedAnonBytes = 2u << 20;
constexpr uint64_t kSharedAnonSalt = 0x5ead0a11c0ffee00ull;

uint64_t* map_shared_anon() {
  void* p = ::mmap(nullptr, kSharedAnonBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* words = static_cast<uint64_t*>(p);
  for (size_t i = 0; i < kSharedAnonBytes / sizeof(uint64_t); ++i) words[i] = pattern_word(i) ^ kSharedAnonSalt;
  return words;
}

// "" when the shared anonymous mapping holds its pattern.
std::string check_shared_anon(const uint64_t* words, const std::string& pid) {
  for (size_t i = 0; i < kSharedAnonBytes / sizeof(uint64_t); ++i) {
    const uint64_t want = pattern_word(i) ^ kSharedAnonSalt;
    if (words[i] != want) {
      char text[200];
      std::snprintf(text, sizeof text, "verify mismatch %s in shared anonymous memory at offset %zu: got %016llx want %016llx",
                    pid.c_str(), i * sizeof(uint64_t), static_cast<unsigned long long>(words[i]),
                    static_cast<unsigned long long>(want));
      return text;
    }
  }
  return "";
}

std::string verify(const Driver& d, uint64_t devptr, size_t bytes, const uint64_t* shared_anon) {
  const std::string pid = std::to_string(::getpid());
  uint64_t* words = map_words(bytes);
  if (words == nullptr) return "verify error " + pid + " mmap: " + std::strerror(errno);
  const int r = d.memcpy_dtoh(words, devptr, bytes);
  std::string result;
  if (r != 0) {
    result = "verify error " + pid + " cuMemcpyDtoH: " + cu_name(d, r);
  } else {
    result = "verify ok " + pid + " " + std::to_string(bytes);
    for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i) {
      if (words[i] != pattern_word(i)) {
        char text[160];
        std::snprintf(text, sizeof text, "verify mismatch %s at offset %zu: got %016llx want %016llx",
                      pid.c_str(), i * sizeof(uint64_t), static_cast<unsigned long long>(words[i]),
                      static_cast<unsigned long long>(pattern_word(i)));
        result = text;
        break;
      }
    }
  }
  ::munmap(words, bytes);
  if (result.rfind("verify ok ", 0) == 0) {
    if (std::string bad = check_shared_anon(shared_anon, pid); !bad.empty()) return bad;
  }
  return result;
}

// One line from stdin (without the newline); false at end of input.
bool read_line(std::string* line) {
  line->clear();
  for (;;) {
    char c = 0;
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (c == '\n') return true;
    line->push_back(c);
  }
}

// The descriptors of CKPT_GPU_TARGET_FDS, made after the driver's so that
// a capture meets both.
struct ExtraFds {
  int counter = -1, semaphore = -1;  // eventfds
  int pipe_read = -1, pipe_write = -1;
  int pair[2] = {-1, -1};
  int listener = -1;  // seqpacket, listening on the abstract name
};

// The abstract name the driver's checkpoint support listens on: its
// network namespace's inode and the pid, between NULs.
std::string uvm_name() {
  struct stat st {};
  const unsigned long long netns = ::stat("/proc/self/ns/net", &st) == 0 ? st.st_ino : 0;
  const std::string text = "cuda-uvmfd-" + std::to_string(netns) + "-" + std::to_string(::getpid());
  return std::string(1, '\0') + text + std::string(1, '\0');
}

socklen_t to_address(const std::string& name, sockaddr_un* addr) {
  *addr = {};
  addr->sun_family = AF_UNIX;
  std::memcpy(addr->sun_path, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
}

// An abstract name as /proc/net/unix shows it: its NULs as '@'.
std::string shown(std::string name) {
  for (char& c : name) {
    if (c == '\0') c = '@';
  }
  return name;
}

constexpr uint64_t kCounter = 5, kSemaphore = 3;
constexpr char kPipeText[] = "buffered-in-the-pipe";

bool make_extra_fds(ExtraFds* x, std::string* why) {
  x->counter = ::eventfd(0, EFD_CLOEXEC);
  x->semaphore = ::eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK);
  int ends[2];
  if (x->counter < 0 || x->semaphore < 0 || ::pipe2(ends, O_NONBLOCK) != 0 ||
      ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, x->pair) != 0) {
    *why = std::string("making the extra descriptors: ") + std::strerror(errno);
    return false;
  }
  x->pipe_read = ends[0];
  x->pipe_write = ends[1];
  const uint64_t c = kCounter, s = kSemaphore;
  if (::write(x->counter, &c, 8) != 8 || ::write(x->semaphore, &s, 8) != 8 ||
      ::write(x->pipe_write, kPipeText, sizeof kPipeText - 1) != static_cast<ssize_t>(sizeof kPipeText - 1)) {
    *why = std::string("filling the extra descriptors: ") + std::strerror(errno);
    return false;
  }
  sockaddr_un addr;
  const socklen_t len = to_address(uvm_name(), &addr);
  x->listener = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (x->listener < 0 || ::bind(x->listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(x->listener, 16) != 0) {
    *why = std::string("making the listening socket: ") + std::strerror(errno);
    return false;
  }
  return true;
}

// The listener's name (getsockname) if it accepts connections
// (SO_ACCEPTCONN), and what a connection made to that name sent once the
// listener accepted it.
std::string probe_listener(int listener) {
  int accepting = 0;
  socklen_t optlen = sizeof accepting;
  if (::getsockopt(listener, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &optlen) != 0 || !accepting) {
    return "(not-listening) accepted=(none)";
  }
  sockaddr_un addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      len <= offsetof(sockaddr_un, sun_path)) {
    return "(unnamed) accepted=(none)";
  }
  const std::string name(addr.sun_path, len - offsetof(sockaddr_un, sun_path));
  std::string accepted = "(none)";
  const int client = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (client >= 0 && ::connect(client, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      ::send(client, "hello", 5, 0) == 5) {
    // A unix connect is queued at once: the non-blocking accept finds it.
    const int server = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    char got[16] = {};
    if (server >= 0 && ::recv(server, got, sizeof got - 1, 0) > 0) accepted = got;
    if (server >= 0) ::close(server);
  }
  if (client >= 0) ::close(client);
  return shown(name) + " accepted=" + accepted;
}

std::string flag_text(int fd) {
  const int fl = ::fcntl(fd, F_GETFL), fdf = ::fcntl(fd, F_GETFD);
  std::string out;
  out += (fl >= 0 && (fl & O_NONBLOCK)) ? "n" : "-";
  out += (fdf >= 0 && (fdf & FD_CLOEXEC)) ? "c" : "-";
  return out;
}

// What the extra descriptors hold, read (and so consumed) now: the counter
// eventfd's value, the semaphore's first two reads (1 each), the pipe's
// bytes, a message sent through the socketpair, and each fd's flags.
std::string read_extra_fds(const ExtraFds& x) {
  uint64_t counter = 0, s1 = 0, s2 = 0;
  if (::read(x.counter, &counter, 8) != 8) counter = ~0ull;
  if (::read(x.semaphore, &s1, 8) != 8) s1 = ~0ull;
  if (::read(x.semaphore, &s2, 8) != 8) s2 = ~0ull;
  char buf[256];
  const ssize_t n = ::read(x.pipe_read, buf, sizeof buf);
  const std::string pipe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "(empty)";
  std::string pair = "(broken)";
  if (::write(x.pair[0], "ping", 4) == 4) {
    char got[8] = {};
    if (::read(x.pair[1], got, 4) == 4) pair = got;
  }
  return "eventfd=" + std::to_string(counter) + " semaphore=" + std::to_string(s1) + "," + std::to_string(s2) +
         " pipe=" + pipe + " socketpair=" + pair + " listener=" + probe_listener(x.listener) +
         " flags=" + flag_text(x.counter) + flag_text(x.semaphore) + flag_text(x.pipe_read) + flag_text(x.pipe_write) +
         flag_text(x.pair[0]) + flag_text(x.pair[1]) + flag_text(x.listener);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : 0;
  if (argc != 2 || bytes == 0 || bytes % 4096 != 0) {
    std::fprintf(stderr, "usage: ckpt_gpu_target BYTES (a multiple of 4096)\n");
    return 2;
  }
  void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    say(std::string("error dlopen libcuda.so.1: ") + (why != nullptr ? why : "unknown"));
    return 1;
  }
  Driver d;
  std::string why;
  if (!resolve(handle, "cuGetErrorName", &d.get_error_name, &why) || !resolve(handle, "cuInit", &d.init, &why) ||
      !resolve(handle, "cuDeviceGet", &d.device_get, &why) ||
      !resolve(handle, "cuDevicePrimaryCtxRetain", &d.primary_ctx_retain, &why) ||
      !resolve(handle, "cuCtxSetCurrent", &d.ctx_set_current, &why) ||
      !resolve(handle, "cuMemAlloc_v2", &d.mem_alloc, &why) ||
      !resolve(handle, "cuMemcpyHtoD_v2", &d.memcpy_htod, &why) ||
      !resolve(handle, "cuMemcpyDtoH_v2", &d.memcpy_dtoh, &why)) {
    say("error " + why);
    return 1;
  }
  int device = 0;
  void* ctx = nullptr;
  uint64_t devptr = 0;
  if (int r = d.init(0); r != 0) return say("error cuInit: " + cu_name(d, r)), 1;
  if (int r = d.device_get(&device, 0); r != 0) return say("error cuDeviceGet: " + cu_name(d, r)), 1;
  if (int r = d.primary_ctx_retain(&ctx, device); r != 0) {
    return say("error cuDevicePrimaryCtxRetain: " + cu_name(d, r)), 1;
  }
  if (int r = d.ctx_set_current(ctx); r != 0) return say("error cuCtxSetCurrent: " + cu_name(d, r)), 1;
  if (int r = d.mem_alloc(&devptr, bytes); r != 0) return say("error cuMemAlloc: " + cu_name(d, r)), 1;
  uint64_t* staging = map_words(bytes);
  if (staging == nullptr) return say(std::string("error mmap: ") + std::strerror(errno)), 1;
  for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i) staging[i] = pattern_word(i);
  if (int r = d.memcpy_htod(devptr, staging, bytes); r != 0) return say("error cuMemcpyHtoD: " + cu_name(d, r)), 1;
  ::munmap(staging, bytes);
  const uint64_t* shared_anon = map_shared_anon();
  if (shared_anon == nullptr) return say(std::string("error mmap shared anonymous: ") + std::strerror(errno)), 1;

  const char* extra_env = std::getenv("CKPT_GPU_TARGET_FDS");
  const bool extra = extra_env != nullptr && std::strcmp(extra_env, "1") == 0;
  ExtraFds x;
  if (extra) {
    if (!make_extra_fds(&x, &why)) return say("error " + why), 1;
    say("fds-expect eventfd=" + std::to_string(kCounter) + " semaphore=1,1 pipe=" + kPipeText +
        " socketpair=ping listener=" + shown(uvm_name()) + " accepted=hello flags=-cn-n-n--c-cnc");
  }
  char ready[96];
  std::snprintf(ready, sizeof ready, "ready %d %llx %zu", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(devptr), bytes);
  say(ready);
  std::string line;
  while (read_line(&line)) {
    if (line == "verify") {
      say(verify(d, devptr, bytes, shared_anon));
    } else if (line == "fds" && extra) {
      say("fds " + read_extra_fds(x));
    } else if (line == "exit") {
      // Without the driver's exit handlers, which would block in a locked
      // process.
      std::_Exit(0);
    } else {
      say("error unknown command '" + line + "'");
    }
  }
  return 0;
}
