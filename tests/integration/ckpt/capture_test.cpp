// SPDX-License-Identifier: Apache-2.0
// capture_process against the target programs of tests/ckpt_targets: the
// manifest agrees with what each target reports about itself, page data
// reads back as the target wrote it, the target runs on afterwards (or is
// killed when asked), and what a checkpoint cannot hold is refused by name
// with the target left running. Needs ptrace rights over a child (root, or
// Yama ptrace_scope below 2); skips otherwise.
#include <csignal>
#include <sys/syscall.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cxlpool/ckpt/capture.hpp"
#include "cxlpool/ckpt/image_reader.hpp"
#include "cxlpool/ckpt/image_writer.hpp"
#include "support/ckpt_target_process.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::ckpt {
namespace {

using test::CkptTarget;

uint64_t hex_of(const std::string& s) { return std::stoull(s, nullptr, 16); }

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "TracerPid:\t0" once the checkpoint let go.
int tracer_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("TracerPid:", 0) == 0) return std::stoi(line.substr(10));
  }
  return -1;
}

class CkptCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    program_ = test::ckpt_target_program();
    if (program_.empty()) GTEST_SKIP() << "CXLPOOL_CKPT_TARGET is not set (run through meson test)";
  }

  // Starts a target; fails the test when it does not come up.
  std::unique_ptr<CkptTarget> start(const std::vector<std::string>& args) {
    auto t = std::make_unique<CkptTarget>(program_, args);
    EXPECT_TRUE(t->started()) << "ckpt_target " << args[0] << " did not start";
    return t;
  }

  // Checkpoints into a memfd and reads the image back through ImageReader.
  // Skips the test when ptrace is not permitted here.
  std::optional<Manifest> capture(pid_t pid, const CaptureOptions& options = {}) {
    auto image = ImageWriter::to_memfd("ckpt-capture-test");
    EXPECT_TRUE(image);
    auto m = capture_process(pid, options, *image);
    if (!m) {
      error_ = m.error();
      return std::nullopt;
    }
    auto reader = ImageReader::from_fd(image->release_fd());
    EXPECT_TRUE(reader) << reader.error().message;
    if (!reader) return std::nullopt;
    reader_.emplace(std::move(*reader));
    return reader_->manifest();
  }

  bool ptrace_denied() const { return error_.code == EPERM; }

  const Vma* vma_at(const Manifest& m, uint64_t addr) {
    for (const Vma& v : m.vmas) {
      if (addr >= v.start && addr < v.end) return &v;
    }
    return nullptr;
  }

  // Stored pages of [addr, addr+bytes), in order.
  std::vector<uint64_t> stored_pages(const Manifest& m, uint64_t addr, uint64_t bytes) {
    std::vector<uint64_t> out;
    for (const PageRun& r : m.runs) {
      for (uint64_t p = 0; p < r.pages; ++p) {
        const uint64_t page = r.addr + p * kPageSize;
        if (page >= addr && page < addr + bytes) out.push_back(page);
      }
    }
    return out;
  }

  // The image's copy of [addr, addr+bytes) (all of it must be stored).
  std::vector<uint8_t> image_bytes(const Manifest& m, uint64_t addr, uint64_t bytes) {
    std::vector<uint8_t> out(bytes);
    uint64_t done = 0;
    for (const PageRun& r : m.runs) {
      const uint64_t end = r.addr + r.pages * kPageSize;
      while (done < bytes && addr + done >= r.addr && addr + done < end) {
        const uint64_t at = addr + done;
        const uint64_t n = std::min(bytes - done, end - at);
        const ssize_t got = ::pread(reader_->fd(), out.data() + done, n, static_cast<off_t>(r.image_offset + (at - r.addr)));
        EXPECT_EQ(got, static_cast<ssize_t>(n));
        done += n;
      }
    }
    EXPECT_EQ(done, bytes) << "not all of the range is in the image";
    return out;
  }

  // The common checks: the leader first, the target's own addresses, and
  // the target running on, untraced.
  test::TargetReport check_common(CkptTarget& t, const Manifest& m) {
    const auto& s = t.setup();
    EXPECT_EQ(m.process.pid, t.pid());
    if (m.threads.empty() || m.fds.size() < 3 || m.process.mm.exe_file == kNoFile) {
      ADD_FAILURE() << "no threads, fds or executable";
      return {};
    }
    EXPECT_EQ(m.threads[0].tid, t.pid());
    EXPECT_EQ(m.process.comm, "ckpt_target");
    EXPECT_EQ(m.process.umask, 027u);
    char cwd[4096];
    EXPECT_NE(::getcwd(cwd, sizeof cwd), nullptr);
    EXPECT_EQ(m.process.cwd, cwd);
    EXPECT_EQ(m.process.creds.uid[0], ::getuid());
    EXPECT_EQ(m.files[m.process.mm.exe_file].path, program_);
    // brk: the target read sbrk(0) before anything could move it back.
    EXPECT_GE(m.process.mm.brk, hex_of(s.at("brk")));
    EXPECT_GE(m.process.mm.brk, m.process.mm.start_brk);
    const Vma* vdso = vma_at(m, hex_of(s.at("vdso")));
    EXPECT_TRUE(vdso && vdso->kind == VmaKind::kVdso && vdso->start == hex_of(s.at("vdso")));
    EXPECT_TRUE(std::any_of(m.vmas.begin(), m.vmas.end(), [](const Vma& v) { return v.kind == VmaKind::kVvar; }));
    const auto rseq = words(s.at("rseq"));
    EXPECT_EQ(m.threads[0].rseq.addr, hex_of(rseq[0]));
    EXPECT_EQ(m.threads[0].rseq.sig, 0x53053053u);  // glibc's RSEQ_SIG on x86
    EXPECT_GE(m.threads[0].rseq.len, 32u);
    EXPECT_NE(m.threads[0].clear_child_tid, 0u) << "glibc sets a tid address for every thread";
    EXPECT_GE(m.threads[0].xsave.size(), 576u);
    // Every thread stopped at code, on a writable stack, with its tid
    // address in writable memory.
    for (const ThreadState& th : m.threads) {
      uint64_t rip, rsp;
      std::memcpy(&rip, th.regs.data() + 16 * 8, 8);  // user_regs_struct.rip
      std::memcpy(&rsp, th.regs.data() + 19 * 8, 8);  // .rsp
      const Vma* code = vma_at(m, rip);
      const Vma* stack = vma_at(m, rsp);
      const Vma* tid_address = vma_at(m, th.clear_child_tid);
      EXPECT_TRUE(code && (code->prot & PROT_EXEC)) << "thread " << th.tid << " rip " << std::hex << rip;
      EXPECT_TRUE(stack && (stack->prot & PROT_WRITE)) << "thread " << th.tid << " rsp " << std::hex << rsp;
      EXPECT_TRUE(tid_address && (tid_address->prot & PROT_WRITE)) << "thread " << th.tid;
    }
    // fd 0 and 1 are the test's pipes, fd 2 /dev/null.
    EXPECT_EQ(m.fds[0].kind, FdKind::kStdio);
    EXPECT_EQ(m.fds[1].kind, FdKind::kStdio);
    EXPECT_EQ(m.fds[2].kind, FdKind::kRegular);
    EXPECT_EQ(m.files[m.fds[2].file].path, "/dev/null");
    // The 256 KiB pattern reads back from the image as the target wrote it.
    const uint64_t pattern = hex_of(s.at("pattern"));
    const auto bytes = image_bytes(m, pattern, 256 * 1024);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (bytes[i] != static_cast<uint8_t>((i * 131) ^ (i >> 9))) {
        ADD_FAILURE() << "pattern byte " << i << " differs in the image";
        break;
      }
    }
    // Let go: not traced, and it answers.
    EXPECT_EQ(tracer_of(t.pid()), 0);
    auto r = t.report();
    EXPECT_TRUE(r) << "the target does not answer after the checkpoint";
    if (!r) return {};
    EXPECT_EQ(r->at("pid"), std::to_string(t.pid()));
    return *r;
  }

  std::string program_;
  Error error_;
  std::optional<ImageReader> reader_;
};

// Whether the target's report value `key` grows within two seconds (it
// runs on after the checkpoint).
bool keeps_growing(CkptTarget& t, const std::string& key) {
  auto a = t.report();
  if (!a) return false;
  for (int i = 0; i < 200; ++i) {
    ::usleep(10000);
    auto b = t.report();
    if (!b) return false;
    if (std::stoull(b->at(key)) > std::stoull(a->at(key))) return true;
  }
  return false;
}

#define CAPTURE_OR_SKIP(m, t, ...)                                                   \
  auto m = capture((t).pid(), ##__VA_ARGS__);                                        \
  if (!m && ptrace_denied()) GTEST_SKIP() << "ptrace not permitted: " << error_.message; \
  ASSERT_TRUE(m) << error_.message

TEST_F(CkptCapture, SingleThreadedLoop) {
  auto t = start({"loop"});
  CAPTURE_OR_SKIP(m, *t);
  EXPECT_EQ(m->threads.size(), 1u);
  check_common(*t, *m);
  // It goes on counting (it spins only while no command waits).
  EXPECT_TRUE(keeps_growing(*t, "counter"));
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, FourThreads) {
  auto t = start({"threads"});
  CAPTURE_OR_SKIP(m, *t);
  check_common(*t, *m);
  std::vector<int32_t> want;
  for (const auto& w : words(t->setup().at("tids"))) want.push_back(std::stoi(w));
  std::vector<int32_t> got;
  for (const ThreadState& th : m->threads) got.push_back(th.tid);
  EXPECT_EQ(got[0], want[0]);
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
  // Every thread's name, the leader's being its comm.
  std::vector<std::string> names;
  for (const ThreadState& th : m->threads) names.push_back(th.name);
  EXPECT_EQ(names[0], m->process.comm);
  std::sort(names.begin() + 1, names.end());
  EXPECT_EQ(std::vector<std::string>(names.begin() + 1, names.end()),
            (std::vector<std::string>{"sleep", "spin", "wait"}));
  // Every thread has its own stack pointer and rseq area.
  for (std::size_t i = 1; i < m->threads.size(); ++i) {
    EXPECT_NE(m->threads[i].rseq.addr, m->threads[0].rseq.addr);
    EXPECT_NE(m->threads[i].clear_child_tid, 0u);
    EXPECT_NE(vma_at(*m, m->threads[i].rseq.addr), nullptr);
  }
  // The thread stopped in nanosleep sleeps on.
  EXPECT_TRUE(keeps_growing(*t, "sleeps"));
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, PendingSignalsItimerAndAltstack) {
  auto t = start({"signals"});
  CAPTURE_OR_SKIP(m, *t);
  check_common(*t, *m);
  const auto& s = t->setup();
  const uint64_t mask = hex_of(s.at("sigmask"));
  EXPECT_EQ(m->threads[0].sigmask & mask, mask);
  auto signo = [](const std::array<uint8_t, 128>& info) {
    int v;
    std::memcpy(&v, info.data(), sizeof v);
    return v;
  };
  ASSERT_EQ(m->threads[0].pending.size(), 1u);
  EXPECT_EQ(signo(m->threads[0].pending[0]), SIGUSR1);
  ASSERT_EQ(m->process.shared_pending.size(), 1u);
  EXPECT_EQ(signo(m->process.shared_pending[0]), SIGUSR2);
  EXPECT_EQ(m->process.itimer_real.interval_us, 250000u);
  EXPECT_GT(m->process.itimer_real.value_us, 0u);
  EXPECT_LE(m->process.itimer_real.value_us, 250000u);
  const SigAction& alarm = m->process.sigactions[SIGALRM - 1];
  EXPECT_EQ(alarm.handler, hex_of(s.at("alarm_handler")));
  EXPECT_TRUE(alarm.flags & SA_ONSTACK);
  EXPECT_TRUE(alarm.flags & SA_RESTART);
  EXPECT_NE(alarm.restorer, 0u);
  const auto alt = words(s.at("altstack"));
  EXPECT_EQ(m->threads[0].altstack.sp, hex_of(alt[0]));
  EXPECT_EQ(m->threads[0].altstack.size, std::stoull(alt[1]));
  // The pending signals are still pending in the target, and the timer
  // still fires.
  auto r = t->report();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->at("pending"), "1 1");
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, GlibcRseq) {
  auto t = start({"rseq"});
  CAPTURE_OR_SKIP(m, *t);
  check_common(*t, *m);
  const auto rseq = words(t->setup().at("rseq"));
  const Vma* v = vma_at(*m, hex_of(rseq[0]));
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->kind, VmaKind::kAnon);
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, VdsoClockThread) {
  auto t = start({"vdso"});
  CAPTURE_OR_SKIP(m, *t);
  check_common(*t, *m);
  EXPECT_EQ(m->threads.size(), 2u);
  // [vdso] and [vvar] are recorded, never stored.
  for (const Vma& v : m->vmas) {
    if (v.kind == VmaKind::kVdso || v.kind == VmaKind::kVvar || v.kind == VmaKind::kVvarVclock) {
      EXPECT_TRUE(stored_pages(*m, v.start, v.end - v.start).empty());
    }
  }
  auto r = t->report();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->at("clock_ok"), "1");
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, FileReadAtAnOffset) {
  test::TempDir dir;
  const std::string path = (dir.path() / "data.txt").string();
  {
    std::ofstream out(path);
    out << "0123456789abcdefghijklmnopqrstuvwxyz";
  }
  auto t = start({"file", path, "10"});
  CAPTURE_OR_SKIP(m, *t);
  const auto r = check_common(*t, *m);
  const int fd = std::stoi(t->setup().at("file_fd"));
  auto e = std::find_if(m->fds.begin(), m->fds.end(), [&](const FdEntry& f) { return f.fd == fd; });
  ASSERT_NE(e, m->fds.end());
  EXPECT_EQ(e->kind, FdKind::kRegular);
  EXPECT_EQ(e->offset, 10u);
  EXPECT_TRUE(e->open_flags & O_CLOEXEC);
  EXPECT_EQ(e->open_flags & O_ACCMODE, static_cast<uint32_t>(O_RDONLY));
  EXPECT_EQ(m->files[e->file].path, path);
  EXPECT_EQ(m->files[e->file].size, 36u);
  // The target reads on from where the checkpoint saw its offset.
  EXPECT_EQ(r.at("read"), "abcdefghijklmnop");
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, PagesDroppedWithDontneedAreNotStored) {
  auto t = start({"dontneed"});
  CAPTURE_OR_SKIP(m, *t);
  check_common(*t, *m);
  const auto region = words(t->setup().at("region"));
  const uint64_t addr = hex_of(region[0]), bytes = std::stoull(region[1]);
  std::vector<uint64_t> want;
  for (uint64_t p = 0; p < bytes / kPageSize; p += 2) want.push_back(addr + p * kPageSize);
  EXPECT_EQ(stored_pages(*m, addr, bytes), want);
  for (uint64_t page : want) {
    const auto data = image_bytes(*m, page, kPageSize);
    EXPECT_EQ(data[0], static_cast<uint8_t>((page - addr) / kPageSize + 1));
  }
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, LargeSparseHeapStoresOnlyTouchedPages) {
  auto t = start({"sparse"});
  CAPTURE_OR_SKIP(m, *t);
  check_common(*t, *m);
  const auto region = words(t->setup().at("region"));
  const uint64_t addr = hex_of(region[0]), bytes = std::stoull(region[1]);
  const uint64_t stride = std::stoull(t->setup().at("stride"));
  std::vector<uint64_t> want;
  for (uint64_t at = 0; at < bytes; at += stride) want.push_back(addr + at);
  EXPECT_EQ(stored_pages(*m, addr, bytes), want);
  // 4096 pages of a GiB, not the GiB.
  EXPECT_LT(m->image_data_bytes, 64ull << 20);
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, KillAfterCapture) {
  auto t = start({"threads"});
  CaptureOptions options;
  options.kill_after = true;
  CAPTURE_OR_SKIP(m, *t, options);
  EXPECT_EQ(m->threads.size(), 4u);
  const int status = t->wait();
  ASSERT_NE(status, -1) << "the target still runs";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

// An image over max_image_bytes fails before the kill: the target runs on.
TEST_F(CkptCapture, AnImageOverItsLimitSparesAKillAfterTarget) {
  auto t = start({"threads"});
  test::TempDir dir;
  CaptureOptions options;
  options.kill_after = true;
  options.image_path = (dir.path() / "image").string();
  options.max_image_bytes = 8192;
  auto captured = capture_to_image(t->pid(), options);
  ASSERT_FALSE(captured);
  if (captured.error().code == EPERM) GTEST_SKIP() << "ptrace not permitted: " << captured.error().message;
  EXPECT_EQ(captured.error().code, EDQUOT) << captured.error().message;
  EXPECT_NE(captured.error().message.find("more than the 8192 allowed"), std::string::npos)
      << captured.error().message;
  EXPECT_NE(::access(options.image_path.c_str(), F_OK), 0);
  EXPECT_TRUE(t->report()) << "the target did not survive";
  // A limit the image fits is no obstacle.
  options.max_image_bytes = 1ull << 40;
  auto fits = capture_to_image(t->pid(), options);
  ASSERT_TRUE(fits) << fits.error().message;
  EXPECT_NE(t->wait(), -1) << "the target still runs";
}

TEST_F(CkptCapture, ImageInACallersFile) {
  auto t = start({"loop"});
  test::TempDir dir;
  CaptureOptions options;
  options.image_path = (dir.path() / "image").string();
  auto captured = capture_to_image(t->pid(), options);
  if (!captured && captured.error().code == EPERM) GTEST_SKIP() << "ptrace not permitted: " << captured.error().message;
  ASSERT_TRUE(captured) << captured.error().message;
  EXPECT_EQ(captured->path, options.image_path);
  EXPECT_TRUE(captured->fd.valid());
  auto reader = ImageReader::open(options.image_path);
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_EQ(reader->manifest().runs.size(), captured->manifest.runs.size());
  EXPECT_EQ(reader->manifest().image_data_bytes, captured->manifest.image_data_bytes);
  // An existing file is not overwritten.
  auto again = capture_to_image(t->pid(), options);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, EEXIST);
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, RefusedCaptureRemovesItsImageFile) {
  auto t = start({"refuse-epoll"});
  test::TempDir dir;
  CaptureOptions options;
  options.image_path = (dir.path() / "image").string();
  auto captured = capture_to_image(t->pid(), options);
  ASSERT_FALSE(captured);
  if (captured.error().code == EPERM) GTEST_SKIP() << "ptrace not permitted: " << captured.error().message;
  EXPECT_EQ(captured.error().code, ENOTSUP);
  EXPECT_NE(::access(options.image_path.c_str(), F_OK), 0);
  EXPECT_TRUE(t->report());
}

TEST_F(CkptCapture, SharedMappingOfANamedRegion) {
  auto t = start({"shared-region"});
  const auto region = words(t->setup().at("region"));
  const uint64_t addr = hex_of(region[0]), bytes = std::stoull(region[1]);
  CaptureOptions options;
  options.regions.push_back({addr, bytes, "weights", 42, PROT_READ | PROT_WRITE});
  CAPTURE_OR_SKIP(m, *t, options);
  check_common(*t, *m);
  const Vma* v = vma_at(*m, addr);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->kind, VmaKind::kCxlpoolRegion);
  EXPECT_TRUE(v->map_flags & MAP_SHARED);
  EXPECT_TRUE(stored_pages(*m, addr, bytes).empty()) << "a region's pages are the daemon's, not the image's";
  ASSERT_EQ(m->regions.size(), 1u);
  EXPECT_EQ(m->regions[0].name, "weights");
  EXPECT_EQ(m->regions[0].region_id, 42u);
  // Without the region named, the same mapping is refused.
  auto image = ImageWriter::to_memfd("ckpt-region");
  ASSERT_TRUE(image);
  auto refused = capture_process(t->pid(), {}, *image);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("shared mapping"), std::string::npos) << refused.error().message;
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, CxlpoolSocketIsTheClientLibrarys) {
  auto t = start({"socket"});
  const int fd = std::stoi(t->setup().at("socket_fd"));
  CaptureOptions options;
  options.cxlpool_socket_inodes.push_back(std::stoull(t->setup().at("socket_ino")));
  CAPTURE_OR_SKIP(m, *t, options);
  check_common(*t, *m);
  auto e = std::find_if(m->fds.begin(), m->fds.end(), [&](const FdEntry& f) { return f.fd == fd; });
  ASSERT_NE(e, m->fds.end());
  EXPECT_EQ(e->kind, FdKind::kCxlpoolSocket);
  EXPECT_EQ(e->file, kNoFile);
  auto image = ImageWriter::to_memfd("ckpt-socket");
  ASSERT_TRUE(image);
  auto refused = capture_process(t->pid(), {}, *image);
  ASSERT_FALSE(refused);
  // Its peer is closed: not a socketpair either, and the refusal says what it is.
  EXPECT_NE(refused.error().message.find("fd " + std::to_string(fd) + " is a unix stream socket"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(t->stop(), 0);
}

// Bytes a pipe of process `pid` holds, through its read end `fd`.
int pipe_bytes(pid_t pid, int fd) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  const int mine = pidfd < 0 ? -1 : static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  int n = -1;
  if (mine >= 0) ::ioctl(mine, FIONREAD, &n);
  if (mine >= 0) ::close(mine);
  if (pidfd >= 0) ::close(pidfd);
  return n;
}

TEST_F(CkptCapture, EventfdPipeAndSocketpairAreKept) {
  auto t = start({"fd-objects"});
  const int efd = std::stoi(t->setup().at("eventfd"));
  const auto pipe = words(t->setup().at("pipe"));
  const auto pair = words(t->setup().at("pair"));
  const int pr = std::stoi(pipe[0]), pw = std::stoi(pipe[1]);
  CAPTURE_OR_SKIP(m, *t);
  check_common(*t, *m);
  auto object = [&](int fd) -> const FdObject* {
    for (const FdObject& o : m->fd_objects)
      if (o.fd == fd) return &o;
    return nullptr;
  };
  auto kind = [&](int fd) {
    for (const FdEntry& e : m->fds)
      if (e.fd == fd) return e.kind;
    return static_cast<FdKind>(0);
  };
  EXPECT_EQ(kind(efd), FdKind::kEventfd);
  ASSERT_NE(object(efd), nullptr);
  EXPECT_EQ(object(efd)->counter, 7u);
  EXPECT_EQ(object(efd)->detail, kEventfdSemaphore);
  EXPECT_EQ(kind(pr), FdKind::kPipe);
  EXPECT_EQ(kind(pw), FdKind::kPipe);
  ASSERT_NE(object(pr), nullptr);
  ASSERT_NE(object(pw), nullptr);
  EXPECT_EQ(object(pr)->object, object(pw)->object);
  EXPECT_EQ(std::string(object(pr)->contents.begin(), object(pr)->contents.end()), "hello");
  EXPECT_EQ(object(pr)->detail, kDefaultPipeBytes);
  for (const auto& end : pair) {
    EXPECT_EQ(kind(std::stoi(end)), FdKind::kSocketPair);
    ASSERT_NE(object(std::stoi(end)), nullptr);
    EXPECT_EQ(object(std::stoi(end))->detail, static_cast<uint32_t>(SOCK_DGRAM));
  }
  EXPECT_EQ(object(std::stoi(pair[0]))->peer, object(std::stoi(pair[1]))->object);
  // The capture read the pipe's bytes and put them back.
  EXPECT_EQ(pipe_bytes(t->pid(), pr), 5);
  // What describe_fds says of each agrees.
  auto verdicts = describe_fds(t->pid(), {});
  ASSERT_TRUE(verdicts) << verdicts.error().message;
  for (const FdVerdict& v : *verdicts) EXPECT_TRUE(v.supported) << "fd " << v.fd << ": " << v.what;
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, ListeningUnixSocketsAreKept) {
  test::TempDir dir;
  const std::string path = (dir.path() / "listener.sock").string();
  auto t = start({"listeners", path});
  const auto abstract = words(t->setup().at("abstract"));
  const int afd = std::stoi(abstract[0]), pfd = std::stoi(t->setup().at("path"));
  CAPTURE_OR_SKIP(m, *t);
  check_common(*t, *m);
  auto find = [&](int fd) -> std::pair<const FdEntry*, const FdObject*> {
    std::pair<const FdEntry*, const FdObject*> out{nullptr, nullptr};
    for (const FdEntry& e : m->fds)
      if (e.fd == fd) out.first = &e;
    for (const FdObject& o : m->fd_objects)
      if (o.fd == fd) out.second = &o;
    return out;
  };
  const auto [ae, ao] = find(afd);
  ASSERT_NE(ae, nullptr);
  ASSERT_NE(ao, nullptr);
  EXPECT_EQ(ae->kind, FdKind::kUnixListener);
  EXPECT_TRUE(ae->open_flags & O_NONBLOCK);
  EXPECT_EQ(ao->detail, static_cast<uint32_t>(SOCK_SEQPACKET));
  EXPECT_EQ(ao->counter, 7u);
  // The name's bytes, its NULs included.
  std::string hex;
  for (uint8_t b : ao->contents) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
  EXPECT_EQ(hex, abstract[1]);
  const auto [pe, po] = find(pfd);
  ASSERT_NE(pe, nullptr);
  ASSERT_NE(po, nullptr);
  EXPECT_EQ(pe->kind, FdKind::kUnixListener);
  EXPECT_EQ(po->detail, static_cast<uint32_t>(SOCK_STREAM));
  EXPECT_EQ(po->counter, 5u);
  EXPECT_EQ(std::string(po->contents.begin(), po->contents.end()), path);
  EXPECT_EQ(t->stop(), 0);
}

TEST_F(CkptCapture, ListenerWhosePathNamesAnotherFileIsRefused) {
  test::TempDir dir;
  const std::string path = (dir.path() / "listener.sock").string();
  auto t = start({"listeners", path});
  const int pfd = std::stoi(t->setup().at("path"));
  // The socket file replaced by a plain file: a restore would bind a name
  // that is no longer this socket's.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  { std::ofstream(path) << "x"; }
  auto verdicts = describe_fds(t->pid(), {});
  ASSERT_TRUE(verdicts) << verdicts.error().message;
  bool seen = false;
  for (const FdVerdict& v : *verdicts) {
    if (v.fd != pfd) continue;
    seen = true;
    EXPECT_FALSE(v.supported);
    EXPECT_NE(v.what.find("no longer names this socket"), std::string::npos) << v.what;
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(t->stop(), 0);
}

struct Refusal {
  const char* mode;
  const char* names;
};

TEST_F(CkptCapture, RefusesWhatItCannotHoldAndLeavesTheTargetRunning) {
  const Refusal cases[] = {
      {"refuse-epoll", "is an epoll instance"},
      {"refuse-lone-pipe", "whose write end the process does not hold"},
      {"refuse-listener-queued", "1 connection waiting to be accepted"},
      {"refuse-timer", "POSIX timers"},
      {"refuse-shared", "writable shared mapping"},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.mode);
    auto t = start({c.mode});
    auto before = t->report();
    ASSERT_TRUE(before);
    auto image = ImageWriter::to_memfd("ckpt-refusal");
    ASSERT_TRUE(image);
    auto m = capture_process(t->pid(), {}, *image);
    if (!m && m.error().code == EPERM) GTEST_SKIP() << "ptrace not permitted: " << m.error().message;
    ASSERT_FALSE(m) << "checkpointed";
    EXPECT_EQ(m.error().code, ENOTSUP) << m.error().message;
    EXPECT_NE(m.error().message.find(c.names), std::string::npos) << m.error().message;
    EXPECT_EQ(tracer_of(t->pid()), 0);
    auto after = t->report();
    ASSERT_TRUE(after) << "the target does not answer after a refused checkpoint";
    EXPECT_EQ(after->at("digest"), before->at("digest"));
    EXPECT_EQ(t->stop(), 0);
  }
}

TEST_F(CkptCapture, RefusesATracedProcess) {
  auto t = start({"loop"});
  // This test traces it first, as a debugger would.
  if (::ptrace(PTRACE_SEIZE, t->pid(), nullptr, nullptr) != 0) GTEST_SKIP() << "ptrace not permitted";
  auto image = ImageWriter::to_memfd("ckpt-traced");
  ASSERT_TRUE(image);
  auto m = capture_process(t->pid(), {}, *image);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, EBUSY) << m.error().message;
  EXPECT_NE(m.error().message.find("already traced"), std::string::npos) << m.error().message;
  // Let go (a detach needs a stopped tracee).
  ::ptrace(PTRACE_INTERRUPT, t->pid(), nullptr, nullptr);
  ::waitpid(t->pid(), nullptr, __WALL);
  EXPECT_EQ(::ptrace(PTRACE_DETACH, t->pid(), nullptr, nullptr), 0);
  EXPECT_TRUE(t->report());
  EXPECT_EQ(t->stop(), 0);
}

// A pidfd of a process that is gone stands for a checked pid that was
// reused: the capture must not go on with whatever process has it now.
TEST_F(CkptCapture, APidfdOfAnExitedProcessRefusesTheCapture) {
  auto checked = start({"loop"});
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, checked->pid(), 0));
  ASSERT_GE(pidfd, 0) << std::strerror(errno);
  ::kill(checked->pid(), SIGKILL);
  ASSERT_NE(checked->wait(), -1);
  auto other = start({"loop"});
  CaptureOptions options;
  options.pidfd = pidfd;
  auto m = capture(other->pid(), options);
  ::close(pidfd);
  if (!m && ptrace_denied()) GTEST_SKIP() << "ptrace not permitted: " << error_.message;
  ASSERT_FALSE(m);
  EXPECT_EQ(error_.code, ESRCH) << error_.message;
  EXPECT_TRUE(keeps_growing(*other, "counter")) << "the other process was left frozen";
  EXPECT_EQ(other->stop(), 0);
}

TEST_F(CkptCapture, NoSuchProcess) {
  auto image = ImageWriter::to_memfd("ckpt-none");
  ASSERT_TRUE(image);
  auto m = capture_process(0x3ffffff, {}, *image);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ESRCH) << m.error().message;
}

}  // namespace
}  // namespace cxlpool::ckpt
