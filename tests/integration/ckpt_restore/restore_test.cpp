// SPDX-License-Identifier: Apache-2.0
// Restores of real processes (as root): each mode of restore_target is run
// once uninterrupted and once checkpointed and restored under each policy,
// and both must print the same; ten clones of one checkpoint share its
// unwritten pages; changed files and corrupt images are refused with the
// reason. CXLPOOL_RESTORE and CKPT_RESTORE_TARGET name the programs.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cxlpool/ckpt/capture.hpp"
#include "cxlpool/ckpt/hot_set.hpp"
#include "cxlpool/ckpt/image_header.hpp"
#include "cxlpool/ckpt/image_writer.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::ckpt {
namespace {

using namespace std::chrono_literals;

// A program with pipes for stdin, stdout and stderr and no other descriptor
// (a checkpoint refuses what it cannot restore, like an inherited fd).
class Piped {
 public:
  explicit Piped(const std::vector<std::string>& argv) {
    int in[2], out[2], err[2];
    if (::pipe(in) || ::pipe(out) || ::pipe(err)) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0), ::dup2(out[1], 1), ::dup2(err[1], 2);
      ::syscall(SYS_close_range, 3u, ~0u, 0u);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(126);
    }
    ::close(in[0]), ::close(out[1]), ::close(err[1]);
    in_ = in[1], out_ = out[0], err_ = err[0];
  }
  ~Piped() {
    if (pid_ > 0) ::kill(pid_, SIGKILL), ::waitpid(pid_, nullptr, 0);
    close_in();
    ::close(out_), ::close(err_);
  }
  pid_t pid() const { return pid_; }
  void write_in(const std::string& s) { ASSERT_EQ(::write(in_, s.data(), s.size()), static_cast<ssize_t>(s.size())); }
  void close_in() {
    if (in_ >= 0) ::close(in_), in_ = -1;
  }
  // One line of stdout without its newline; empty at EOF or timeout.
  std::string line(std::chrono::milliseconds timeout = 20s) {
    std::string s;
    char c;
    while (wait_readable(out_, timeout) && ::read(out_, &c, 1) == 1) {
      if (c == '\n') return s;
      s += c;
    }
    return s;
  }
  std::string all_out(std::chrono::milliseconds timeout = 60s) { return drain(out_, timeout); }
  std::string all_err(std::chrono::milliseconds timeout = 60s) { return drain(err_, timeout); }
  int wait() {
    int ws = 0;
    ::waitpid(pid_, &ws, 0);
    pid_ = -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  }

 private:
  static bool wait_readable(int fd, std::chrono::milliseconds timeout) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
  }
  static std::string drain(int fd, std::chrono::milliseconds timeout) {
    std::string s;
    char buf[4096];
    ssize_t n;
    while (wait_readable(fd, timeout) && (n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
    return s;
  }
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
};

std::string env_or_skip(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

class Restore : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "restores need root (clone3 set_tid, PR_SET_MM_MAP, ptrace)";
    restorer_ = env_or_skip("CXLPOOL_RESTORE");
    target_ = env_or_skip("CKPT_RESTORE_TARGET");
    if (restorer_.empty() || target_.empty()) GTEST_SKIP() << "CXLPOOL_RESTORE / CKPT_RESTORE_TARGET not set";
    data_ = (dir_.path() / "data.txt").string();
    for (int i = 0; i < 8192; ++i) data_text_ += static_cast<char>('A' + i % 26);
    std::ofstream(data_) << data_text_;
  }

  std::vector<std::string> target_argv(const std::string& mode) const { return {target_, mode, data_}; }

  // What the target prints after "checkpoint" when nothing interrupts it.
  std::string uninterrupted(const std::string& mode) {
    Piped p(target_argv(mode));
    p.write_in("x");
    const std::string out = p.all_out();
    EXPECT_EQ(p.wait(), 0) << out;
    const size_t at = out.find("checkpoint\n");
    return at == std::string::npos ? "no checkpoint line: " + out : out.substr(at + 11);
  }

  // Checkpoints the target while it waits in MODE and kills it.
  std::string checkpoint(const std::string& mode) {
    const std::string image = (dir_.path() / (mode + "-" + std::to_string(images_++) + ".img")).string();
    Piped p(target_argv(mode));
    EXPECT_EQ(p.line(), "checkpoint");
    auto writer = ImageWriter::to_file(image);
    EXPECT_TRUE(writer) << writer.error().message;
    CaptureOptions options;
    options.kill_after = true;
    auto manifest = capture_process(p.pid(), options, *writer);
    EXPECT_TRUE(manifest) << manifest.error().message;
    p.wait();
    return image;
  }

  struct Restored {
    int status = -1;
    std::string out, err;
  };
  Restored restore(const std::string& image, const std::string& policy, int count = 1,
                   const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {restorer_, image, "--policy", policy, "--count", std::to_string(count)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    Piped r(argv);
    r.write_in("x");
    r.close_in();
    Restored out;
    out.out = r.all_out();
    out.err = r.all_err();
    out.status = r.wait();
    return out;
  }

  test::TempDir dir_;
  std::string restorer_, target_, data_, data_text_;
  int images_ = 0;
};

const char* const kModes[] = {"threads", "signals", "rseq", "vdso", "file", "dontneed", "sparse", "shmem"};
const char* const kPolicies[] = {"mow", "moa", "hybrid", "copy"};

TEST_F(Restore, EveryModeUnderEveryPolicyPrintsWhatTheOriginalDoes) {
  for (const char* mode : kModes) {
    const std::string expected = uninterrupted(mode);
    if (std::string(mode) == "threads") {
      // Each thread's own name, which a clone's threads must have again
      // (else they carry the leader's).
      EXPECT_NE(expected.find("thread 1 named fifteen-bytes:1\nthread 2 named w2\nnewline\n"), std::string::npos)
          << expected;
    }
    const std::string image = checkpoint(mode);
    for (const char* policy : kPolicies) {
      const Restored r = restore(image, policy);
      EXPECT_EQ(r.status, 0) << mode << " " << policy << ": " << r.err;
      EXPECT_EQ(r.out, expected) << mode << " " << policy << ": " << r.err;
    }
  }
}

// Shared anonymous memory another process maps cannot be restored shared
// with it: the capture refuses, naming that process.
TEST_F(Restore, SharedAnonymousMemoryAnotherProcessMapsIsRefused) {
  Piped p({target_, "shmem-forked"});
  const std::string sharer = p.line();
  ASSERT_EQ(sharer.rfind("sharer ", 0), 0u) << sharer;
  ASSERT_EQ(p.line(), "checkpoint");
  auto writer = ImageWriter::to_file((dir_.path() / "shmem-forked.img").string());
  ASSERT_TRUE(writer) << writer.error().message;
  auto manifest = capture_process(p.pid(), CaptureOptions{}, *writer);
  ASSERT_FALSE(manifest);
  EXPECT_NE(manifest.error().message.find("mapped by process " + sharer.substr(7) + " too"), std::string::npos)
      << manifest.error().message;
  p.write_in("x");
  EXPECT_EQ(p.wait(), 0);
}

// docs/ckpt.md "MADV_DONTNEED and allocator trimming": under mow the clone's
// private pages are a MAP_PRIVATE mapping of the image, so a page dropped
// after the restore reads the checkpoint's contents again (anonymous memory
// reads zeros), and MADV_FREE, which only anonymous memory takes, fails.
// copy and moa give anonymous memory back, as the original had (moa's pager
// zero-fills a range the clone dropped).
TEST_F(Restore, DontneedAfterTheRestoreRefillsFromTheImageUnderMow) {
  const std::string image = checkpoint("dontneed-after");
  const Restored mow = restore(image, "mow");
  EXPECT_EQ(mow.out, "anonymous page after MADV_DONTNEED reads 5a\nMADV_FREE refused\n") << mow.err;
  for (const char* policy : {"copy", "moa"}) {
    const Restored r = restore(image, policy);
    EXPECT_EQ(r.out, uninterrupted("dontneed-after")) << policy << ": " << r.err;
    EXPECT_EQ(r.out, "anonymous page after MADV_DONTNEED reads 00\nMADV_FREE accepted\n") << policy;
  }
}

// A MAP_PRIVATE file mapping refills from its file after MADV_DONTNEED; in a
// mow (or moa: userfaultfd cannot serve file mappings) clone the page the
// process had changed comes from the image, so it refills with the changed
// page, not the file's.
TEST_F(Restore, DontneedOnAChangedFilePageRefillsFromTheImageUnderMow) {
  EXPECT_EQ(uninterrupted("file-dontneed"), "file page before MADV_DONTNEED X\nfile page after MADV_DONTNEED A\n");
  const std::string image = checkpoint("file-dontneed");
  EXPECT_EQ(restore(image, "mow").out, "file page before MADV_DONTNEED X\nfile page after MADV_DONTNEED X\n");
  EXPECT_EQ(restore(image, "moa").out, "file page before MADV_DONTNEED X\nfile page after MADV_DONTNEED X\n");
  EXPECT_EQ(restore(image, "copy").out, "file page before MADV_DONTNEED X\nfile page after MADV_DONTNEED A\n");
}

// The capture tests' target (tests/ckpt_targets): its report before the
// checkpoint and a clone's after the restore agree, counters only grow, and
// the clone keeps running (a second report moves on where the mode moves).
std::map<std::string, std::string> report(Piped& p) {
  p.write_in("report\n");
  std::map<std::string, std::string> r;
  for (std::string l = p.line(); !l.empty() && l != "done"; l = p.line()) {
    const size_t space = l.find(' ');
    r[l.substr(0, space)] = space == std::string::npos ? "" : l.substr(space + 1);
  }
  return r;
}

TEST_F(Restore, CaptureTargetsResumeUnderEveryPolicy) {
  const std::string target = env_or_skip("CKPT_TARGET");
  if (target.empty()) GTEST_SKIP() << "CKPT_TARGET not set";
  const std::vector<std::vector<std::string>> modes = {
      {"loop"}, {"threads"}, {"signals"}, {"rseq"}, {"vdso"}, {"file", data_, "100"}, {"dontneed"}, {"sparse"},
      // Each clone binds the names again: the abstract one freed by the
      // one before, the path over the socket file it left.
      {"listeners", (dir_.path() / "listener.sock").string()}};
  const std::set<std::string> growing = {"counter", "sleeps", "alarms_seen"};
  for (const auto& mode : modes) {
    std::vector<std::string> argv = {target};
    argv.insert(argv.end(), mode.begin(), mode.end());
    Piped p(argv);
    for (std::string l = p.line(); l != "ready"; l = p.line()) ASSERT_FALSE(l.empty()) << mode[0];
    const auto before = report(p);
    const std::string image = (dir_.path() / (mode[0] + "-capture.img")).string();
    {
      auto writer = ImageWriter::to_file(image);
      ASSERT_TRUE(writer) << writer.error().message;
      CaptureOptions options;
      options.kill_after = true;
      auto manifest = capture_process(p.pid(), options, *writer);
      ASSERT_TRUE(manifest) << mode[0] << ": " << manifest.error().message;
      p.wait();
    }
    for (const char* policy : kPolicies) {
      Piped r({restorer_, image, "--policy", policy});
      const auto after = report(r);
      usleep(600000);
      const auto later = report(r);
      r.write_in("exit\n");
      EXPECT_EQ(r.wait(), 0) << mode[0] << " " << policy << ": " << r.all_err(1s);
      ASSERT_FALSE(after.empty()) << mode[0] << " " << policy;
      for (const auto& [key, value] : before) {
        ASSERT_TRUE(after.contains(key)) << mode[0] << " " << policy << ": " << key;
        if (key == "read")  // reads on from where the original stopped
          EXPECT_EQ(after.at(key), data_text_.substr(100 + value.size(), value.size())) << policy;
        else if (growing.contains(key))
          EXPECT_GE(std::stoull(after.at(key)), std::stoull(value)) << mode[0] << " " << policy << ": " << key;
        else
          EXPECT_EQ(after.at(key), value) << mode[0] << " " << policy << ": " << key;
      }
      if (mode[0] == "loop" || mode[0] == "threads" || mode[0] == "vdso") {
        EXPECT_GT(std::stoull(later.at("counter")), std::stoull(after.at("counter"))) << mode[0] << " " << policy;
      }
      if (mode[0] == "signals") {
        EXPECT_GT(std::stoull(later.at("alarms_seen")), std::stoull(before.at("alarms_seen"))) << policy;
      }
      if (mode[0] == "vdso") { EXPECT_EQ(later.at("clock_ok"), "1") << policy; }
    }
  }
}

uint64_t pagemap_entry(pid_t pid, uint64_t addr) {
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/pagemap").c_str(), O_RDONLY);
  uint64_t entry = 0;
  if (fd >= 0) {
    if (::pread(fd, &entry, 8, static_cast<off_t>(addr / 4096 * 8)) != 8) entry = 0;
    ::close(fd);
  }
  return entry;
}

uint64_t pfn_of(pid_t pid, uint64_t addr) {
  const uint64_t entry = pagemap_entry(pid, addr);
  return (entry >> 63) ? (entry & ((1ull << 55) - 1)) : 0;
}

std::vector<pid_t> children_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> out;
  pid_t c;
  while (f >> c) out.push_back(c);
  return out;
}

TEST_F(Restore, TenClonesRunAtOnceAndShareUnwrittenPages) {
  const std::string image = checkpoint("share");
  Piped r({restorer_, image, "--count", "10"});
  r.write_in("xxxxxxxxxx");  // each clone resumes in its read of one byte
  uint64_t addr = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string l = r.line();
    ASSERT_EQ(l.rfind("shared at ", 0), 0u) << l << r.all_err(1s);
    const uint64_t a = std::stoull(l.substr(10), nullptr, 16);
    if (addr) { EXPECT_EQ(a, addr); }
    addr = a;
  }
  // Each keeper's one child is its clone; the clones' pages at the same
  // address are the image's page frames, one for all.
  std::vector<pid_t> clones;
  for (pid_t keeper : children_of(r.pid()))
    for (pid_t c : children_of(keeper)) clones.push_back(c);
  ASSERT_EQ(clones.size(), 10u);
  for (uint64_t page = 0; page < 64; page += 9) {
    const uint64_t first = pfn_of(clones[0], addr + page * 4096);
    ASSERT_NE(first, 0u) << "page " << page << " not present (pagemap shows frames to root only)";
    for (pid_t c : clones) EXPECT_EQ(pfn_of(c, addr + page * 4096), first) << "clone " << c << " page " << page;
  }
  // A page a clone writes becomes its own.
  std::ofstream(data_ + ".write").flush();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(r.line(), "wrote");
  std::vector<uint64_t> written;
  for (pid_t c : clones) written.push_back(pfn_of(c, addr));
  for (size_t i = 1; i < written.size(); ++i) EXPECT_NE(written[i], written[0]);
  EXPECT_EQ(pfn_of(clones[0], addr + 4096), pfn_of(clones[9], addr + 4096));
  std::ofstream(data_ + ".exit").flush();
  r.close_in();
  EXPECT_EQ(r.wait(), 0) << r.all_err(1s);
}

TEST_F(Restore, AListenerWhoseNameIsTakenOrReplacedIsRefused) {
  const std::string target = env_or_skip("CKPT_TARGET");
  if (target.empty()) GTEST_SKIP() << "CKPT_TARGET not set";
  const std::string path = (dir_.path() / "taken.sock").string();
  const std::string image = (dir_.path() / "listeners.img").string();
  {
    // The original lives on, listening on both names.
    Piped p({target, "listeners", path});
    for (std::string l = p.line(); l != "ready"; l = p.line()) ASSERT_FALSE(l.empty());
    auto writer = ImageWriter::to_file(image);
    ASSERT_TRUE(writer) << writer.error().message;
    auto manifest = capture_process(p.pid(), {}, *writer);
    ASSERT_TRUE(manifest) << manifest.error().message;
    Piped r({restorer_, image, "--policy", "mow"});
    EXPECT_EQ(r.wait(), 1);
    const std::string err = r.all_err(1s);
    EXPECT_NE(err.find("cannot bind @ckpt-target-" + std::to_string(p.pid()) + "@b again: the name is in use"),
              std::string::npos)
        << err;
  }
  // The original gone: its abstract name is free, its socket file left
  // behind, and replaced here by a plain file, which a restore leaves alone.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  { std::ofstream(path) << "not a socket"; }
  Piped r({restorer_, image, "--policy", "mow"});
  EXPECT_EQ(r.wait(), 1);
  const std::string err = r.all_err(1s);
  EXPECT_NE(err.find("binds " + path + ", which is now a file that is not a socket"), std::string::npos) << err;
  std::ifstream left(path);
  std::string text;
  std::getline(left, text);
  EXPECT_EQ(text, "not a socket");
}

TEST_F(Restore, AChangedFileIsRefused) {
  const std::string image = checkpoint("file");
  {
    std::ofstream f(data_, std::ios::app);
    f << "more";
  }
  const Restored r = restore(image, "mow");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(data_ + " changed since the checkpoint: its size is 8196 bytes, was 8192"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(Restore, ACorruptImageIsRefused) {
  const std::string image = checkpoint("vdso");
  {
    // A byte of the manifest flipped.
    const int fd = ::open(image.c_str(), O_RDWR);
    ImageHeaderBytes bytes;
    ASSERT_EQ(::pread(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    auto header = decode_image_header(bytes, static_cast<uint64_t>(::lseek(fd, 0, SEEK_END)));
    ASSERT_TRUE(header) << header.error().message;
    const off_t at = static_cast<off_t>(header->manifest_offset + header->manifest_bytes / 2);
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, at), 1);
    c ^= 0x40;
    ASSERT_EQ(::pwrite(fd, &c, 1, at), 1);
    ::close(fd);
  }
  const Restored r = restore(image, "mow");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cxlpool-restore: " + image), std::string::npos) << r.err;
  ::truncate(image.c_str(), 100);
  const Restored cut = restore(image, "mow");
  EXPECT_EQ(cut.status, 1);
  EXPECT_NE(cut.err.find("header"), std::string::npos) << cut.err;
}

bool local_anonymous(uint64_t entry) { return (entry >> 63) && !((entry >> 61) & 1); }

// docs/ckpt.md "Hot sets": every mode restored under hybrid with the hot
// set its moa restore recorded prints what the original does.
TEST_F(Restore, HybridWithARecordedHotSetPrintsWhatTheOriginalDoes) {
  for (const char* mode : kModes) {
    const std::string expected = uninterrupted(mode);
    if (std::string(mode) == "threads") {
      // Each thread's own name, which a clone's threads must have again
      // (else they carry the leader's).
      EXPECT_NE(expected.find("thread 1 named fifteen-bytes:1\nthread 2 named w2\nnewline\n"), std::string::npos)
          << expected;
    }
    const std::string image = checkpoint(mode);
    const std::string hot = image + ".hot";
    const Restored rec = restore(image, "moa", 1, {"--record-hot", hot});
    EXPECT_EQ(rec.status, 0) << mode << ": " << rec.err;
    EXPECT_EQ(rec.out, expected) << mode << ": " << rec.err;
    auto set = read_hot_set_file(hot);
    ASSERT_TRUE(set) << mode << ": " << set.error().message;
    EXPECT_EQ(set->source, HotSource::kFaults);
    EXPECT_FALSE(set->pages.empty()) << mode;
    const Restored h = restore(image, "hybrid", 1, {"--hot", hot});
    EXPECT_EQ(h.status, 0) << mode << ": " << h.err;
    EXPECT_EQ(h.out, expected) << mode << ": " << h.err;
  }
}

// The pages a moa clone faulted are, under hybrid with that hot set, the
// clone's own anonymous pages from the start; without it they are the
// image's file pages.
TEST_F(Restore, HotPagesAreLocalAfterAHybridRestore) {
  const std::string image = checkpoint("share");
  const std::string hot = image + ".hot";
  auto run = [&](const std::vector<std::string>& args, auto&& while_running) {
    std::vector<std::string> argv = {restorer_, image};
    argv.insert(argv.end(), args.begin(), args.end());
    Piped r(argv);
    r.write_in("x");
    const std::string l = r.line();
    EXPECT_EQ(l.rfind("shared at ", 0), 0u) << l << r.all_err(1s);
    const uint64_t addr = l.size() > 10 ? std::stoull(l.substr(10), nullptr, 16) : 0;
    const std::vector<pid_t> keepers = children_of(r.pid());
    const pid_t clone = keepers.empty() || children_of(keepers[0]).empty() ? -1 : children_of(keepers[0])[0];
    while_running(addr, clone);
    std::ofstream(data_ + ".write").flush();
    EXPECT_EQ(r.line(), "wrote");
    std::ofstream(data_ + ".exit").flush();
    r.close_in();
    EXPECT_EQ(r.wait(), 0) << r.all_err(1s);
    std::filesystem::remove(data_ + ".write");
    std::filesystem::remove(data_ + ".exit");
    return addr;
  };
  const uint64_t addr = run({"--policy", "moa", "--record-hot", hot}, [](uint64_t, pid_t) {});
  auto set = read_hot_set_file(hot);
  ASSERT_TRUE(set) << set.error().message;
  const std::set<uint64_t> pages(set->pages.begin(), set->pages.end());
  for (uint64_t p = 0; p < 64; ++p) EXPECT_TRUE(pages.contains(addr + p * 4096)) << "page " << p;
  run({"--policy", "hybrid", "--hot", hot}, [&](uint64_t a, pid_t clone) {
    ASSERT_GT(clone, 0);
    for (uint64_t p = 0; p < 64; ++p)
      EXPECT_TRUE(local_anonymous(pagemap_entry(clone, a + p * 4096))) << "page " << p << " is not local";
  });
  run({"--policy", "hybrid"}, [&](uint64_t a, pid_t clone) {
    ASSERT_GT(clone, 0);
    EXPECT_FALSE(local_anonymous(pagemap_entry(clone, a + 4096))) << "without a hot set the page is the image's";
  });
}

// A mow clone's written pages make a hot set too: the one page the clone
// wrote is in it, pages it only read are not.
TEST_F(Restore, AMowCloneRecordsTheImagePagesItWrote) {
  const std::string image = checkpoint("share");
  const std::string hot = image + ".written";
  Piped r({restorer_, image, "--policy", "mow", "--record-hot", hot, "--record-ms", "1500"});
  r.write_in("x");
  const std::string l = r.line();
  ASSERT_EQ(l.rfind("shared at ", 0), 0u) << l << r.all_err(1s);
  const uint64_t addr = std::stoull(l.substr(10), nullptr, 16);
  std::ofstream(data_ + ".write").flush();
  EXPECT_EQ(r.line(), "wrote");
  for (int i = 0; i < 100 && !std::filesystem::exists(hot); ++i) std::this_thread::sleep_for(50ms);
  std::ofstream(data_ + ".exit").flush();
  r.close_in();
  EXPECT_EQ(r.wait(), 0) << r.all_err(1s);
  auto set = read_hot_set_file(hot);
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_EQ(set->source, HotSource::kWritten);
  const std::set<uint64_t> pages(set->pages.begin(), set->pages.end());
  EXPECT_TRUE(pages.contains(addr));
  EXPECT_FALSE(pages.contains(addr + 4096));
}

TEST_F(Restore, AHotSetOfAnotherImageIsRefused) {
  const std::string image = checkpoint("threads");
  const std::string other = checkpoint("threads");
  const std::string hot = image + ".hot";
  ASSERT_EQ(restore(image, "moa", 1, {"--record-hot", hot}).status, 0);
  const Restored r = restore(other, "hybrid", 1, {"--hot", hot});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("recorded for another image"), std::string::npos) << r.err;
}

// The tids of pid's threads as this namespace numbers them, sorted.
std::set<pid_t> tids_of(pid_t pid) {
  std::set<pid_t> tids;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
    tids.insert(static_cast<pid_t>(std::stol(e.path().filename().string())));
  return tids;
}

std::string nspid_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("NSpid:", 0) == 0) return line.substr(6);
  return "";
}

TEST_F(Restore, HostPidsGiveTheCloneAndItsThreadsTheirPidsHereToo) {
  const std::string target = env_or_skip("CKPT_TARGET");
  if (target.empty()) GTEST_SKIP() << "CKPT_TARGET not set";
  Piped p({target, "threads"});
  std::set<pid_t> reported;  // "tids T0 T1 T2 T3", as the target sees them
  for (std::string l = p.line(); l != "ready"; l = p.line()) {
    ASSERT_FALSE(l.empty());
    if (l.rfind("tids ", 0) != 0) continue;
    std::istringstream in(l.substr(5));
    for (pid_t t = 0; in >> t;) reported.insert(t);
  }
  const pid_t pid = p.pid();
  const std::set<pid_t> tids = tids_of(pid);
  ASSERT_EQ(tids.size(), 4u);
  ASSERT_EQ(reported, tids);
  const std::string image = (dir_.path() / "host-pids.img").string();
  {
    auto writer = ImageWriter::to_file(image);
    ASSERT_TRUE(writer) << writer.error().message;
    CaptureOptions options;
    options.kill_after = true;
    auto manifest = capture_process(pid, options, *writer);
    ASSERT_TRUE(manifest) << manifest.error().message;
    p.wait();
  }
  Piped r({restorer_, image, "--policy", "mow", "--host-pids"});
  const auto after = report(r);
  ASSERT_FALSE(after.empty()) << r.all_err(1s);
  // The same pid and tids here as in the clone's own namespace.
  EXPECT_EQ(tids_of(pid), tids);
  std::istringstream levels(nspid_of(pid));
  pid_t outer = 0, inner = 0;
  levels >> outer >> inner;
  EXPECT_EQ(outer, pid);
  EXPECT_EQ(inner, pid);
  r.write_in("exit\n");
  EXPECT_EQ(r.wait(), 0) << r.all_err(1s);

  // Once only: the second clone's pids would be taken.
  const Restored two = restore(image, "mow", 2, {"--host-pids"});
  EXPECT_EQ(two.status, 2);
  EXPECT_NE(two.err.find("--host-pids restores one clone"), std::string::npos) << two.err;
  // A pid in use here is refused with the reason.
  Piped busy({target, "threads"});
  for (std::string l = busy.line(); l != "ready"; l = busy.line()) ASSERT_FALSE(l.empty());
  const std::string busy_image = (dir_.path() / "host-pids-busy.img").string();
  {
    auto writer = ImageWriter::to_file(busy_image);
    ASSERT_TRUE(writer) << writer.error().message;
    auto manifest = capture_process(busy.pid(), CaptureOptions{}, *writer);
    ASSERT_TRUE(manifest) << manifest.error().message;
  }
  const Restored taken = restore(busy_image, "mow", 1, {"--host-pids"});
  EXPECT_EQ(taken.status, 1);
  EXPECT_NE(taken.err.find("here and in the parent pid namespace: File exists"), std::string::npos) << taken.err;
}

}  // namespace
}  // namespace cxlpool::ckpt
