// SPDX-License-Identifier: Apache-2.0
// Guest side of vm_ckpt_numa: a process whose memory is on the CXL-like
// node 1 is checkpointed there (its image's page cache on node 1 too) and
// restored with node 0 as the clone's memory: under mow the clone maps the
// image's node-1 pages and a page it writes is copied to node 0 (pulled
// across as written); under copy everything is on node 0 from the start.
// Per-node pages come from the clone's /proc/PID/numa_maps, before and
// after a read pass and a write of 10% of its pages.
//
// usage: vm_ckpt_numa TARGET CXLPOOL_CKPT CXLPOOL_RESTORE [--size-mib N] [--report FILE]
//   TARGET is ckpt_bench_target. Exit: 0 ok, 1 failure, 77 no node 1 / not root.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "report.hpp"
#include "vm_options.hpp"

namespace vt = cxlpool::vmtest;

namespace {

constexpr int kDramNode = 0;
constexpr int kCxlNode = 1;
constexpr int kMpolDefault = 0;
constexpr int kMpolBind = 2;
constexpr const char* kImage = "/tmp/vm-ckpt-numa.img";

// This thread's (and its children's) allocations on `node`; -1: default.
bool bind_to(int node) {
  if (node < 0) return ::syscall(SYS_set_mempolicy, kMpolDefault, nullptr, 0) == 0;
  unsigned long mask = 1ul << node;
  return ::syscall(SYS_set_mempolicy, kMpolBind, &mask, sizeof mask * 8) == 0;
}

// A child with stdin/stdout piped (stderr too) and optionally fd 3.
struct Child {
  pid_t pid = -1;
  int in = -1, out = -1, report = -1;
  std::string buffered;

  ~Child() {
    for (int fd : {in, out, report}) {
      if (fd >= 0) ::close(fd);
    }
    if (pid > 0) ::kill(pid, SIGKILL), ::waitpid(pid, nullptr, 0);
  }
  int wait() {
    int status = 0;
    if (pid <= 0 || ::waitpid(pid, &status, 0) != pid) return -1;
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  void send(const std::string& line) { (void)!::write(in, (line + "\n").data(), line.size() + 1); }
  // The next line from fd, "" after 60 s or at its end.
  static std::string line_from(int fd, std::string& buffered) {
    for (;;) {
      if (const size_t nl = buffered.find('\n'); nl != std::string::npos) {
        std::string l = buffered.substr(0, nl);
        buffered.erase(0, nl + 1);
        return l;
      }
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 60'000) <= 0) return "";
      char chunk[4096];
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) return "";
      buffered.append(chunk, static_cast<size_t>(n));
    }
  }
  std::string line() { return line_from(out, buffered); }
  // The next line starting with `prefix` (others kept in `skipped`).
  std::string expect(const std::string& prefix) {
    for (std::string l = line(); !l.empty(); l = line()) {
      if (l.rfind(prefix, 0) == 0) return l;
      skipped += " | " + l;
    }
    return "";
  }
  std::string skipped;
};

Child spawn(const std::vector<std::string>& argv, bool with_report) {
  Child c;
  int in[2], out[2], report[2] = {-1, -1};
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return c;
  if (with_report && ::pipe2(report, O_CLOEXEC) != 0) return c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    if (with_report) ::dup2(report[1], 3);
    ::syscall(SYS_close_range, with_report ? 4u : 3u, ~0u, 0u);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::_Exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  if (with_report) ::close(report[1]);
  c.in = in[1];
  c.out = out[0];
  c.report = with_report ? report[0] : -1;
  return c;
}

// Pages per node of a process's mappings of the image file (mow: the
// checkpoint's pages it reads, and the copies of those it wrote, which
// numa_maps counts in the same line as anon=) and of its anonymous ones.
struct NodePages {
  long image[2] = {0, 0};
  long image_written = 0;
  long anon[2] = {0, 0};
  std::string text() const {
    return "image mappings node0 " + std::to_string(image[0]) + " node1 " + std::to_string(image[1]) + " (" +
           std::to_string(image_written) + " written), anonymous node0 " + std::to_string(anon[0]) + " node1 " +
           std::to_string(anon[1]);
  }
};

NodePages numa_pages(pid_t pid) {
  NodePages np;
  std::ifstream in("/proc/" + std::to_string(pid) + "/numa_maps");
  for (std::string line; std::getline(in, line);) {
    const bool image = line.find(std::string("file=") + kImage) != std::string::npos;
    if (!image && line.find(" anon=") == std::string::npos) continue;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (image && w.rfind("anon=", 0) == 0) np.image_written += std::atol(w.c_str() + 5);
      for (int node : {0, 1}) {
        const std::string key = "N" + std::to_string(node) + "=";
        if (w.rfind(key, 0) == 0) (image ? np.image : np.anon)[node] += std::atol(w.c_str() + key.size());
      }
    }
  }
  return np;
}

pid_t first_child(pid_t keeper) {
  std::ifstream in("/proc/" + std::to_string(keeper) + "/task/" + std::to_string(keeper) + "/children");
  long pid = 0;
  return in >> pid ? static_cast<pid_t>(pid) : -1;
}

struct Programs {
  std::string target, ckpt, restore;
};

// Restores the image under `policy` bound to node 0 and records what the
// clone holds where; fails the report on a broken expectation.
int restore_on_dram(const Programs& p, const std::string& policy, long pages, vt::Report& report) {
  if (!bind_to(kDramNode)) return report.failure(std::string("set_mempolicy: ") + std::strerror(errno));
  Child r = spawn({p.restore, kImage, "--policy", policy, "--report-fd", "3"}, true);
  bind_to(-1);
  std::string rb;
  const std::string reported = Child::line_from(r.report, rb);
  long original = 0, keeper = 0;
  std::istringstream(reported) >> original >> keeper;
  const std::string restored = r.expect("cxlpool-restore: clone 1:");
  const pid_t clone = keeper > 0 ? first_child(static_cast<pid_t>(keeper)) : -1;
  if (clone <= 0 || restored.empty()) {
    std::string said = r.skipped;
    for (std::string l = r.line(); !l.empty(); l = r.line()) said += " | " + l;
    return report.failure(policy + ": no clone (report '" + reported + "', exit " + std::to_string(r.wait()) +
                          ")" + said);
  }
  const size_t in_at = restored.find("restored in ");
  report.line(policy + ": " + (in_at == std::string::npos ? restored : restored.substr(in_at)));
  const NodePages at_restore = numa_pages(clone);
  report.line(policy + " after restore: " + at_restore.text());
  r.send("read");
  r.expect("read_ms");
  const NodePages after_read = numa_pages(clone);
  report.line(policy + " after a read pass: " + after_read.text());
  r.send("write 10");
  r.expect("write_ms");
  const NodePages after_write = numa_pages(clone);
  report.line(policy + " after writing 10% of the pages: " + after_write.text());
  r.send("quit");
  const int status = r.wait();
  if (status != 0) return report.failure(policy + ": cxlpool-restore exited " + std::to_string(status));

  const long written = pages / 10;
  if (policy == "mow") {
    // Read: the checkpoint's pages, on node 1.
    if (after_read.image[1] < pages * 95 / 100) {
      return report.failure("mow: fewer than 95% of the pages read from the image on node 1");
    }
    // Written: each copied to node 0 (node 0 gains them, node 1 loses them
    // from the clone's view), the rest still node 1's.
    if (after_write.image_written < written * 95 / 100 ||
        after_write.image[0] - after_read.image[0] < written * 95 / 100 ||
        after_read.image[1] - after_write.image[1] < written * 95 / 100) {
      return report.failure("mow: the written pages did not move to node 0");
    }
    if (after_write.image[1] < (pages - written) * 95 / 100) {
      return report.failure("mow: the unwritten pages left node 1");
    }
  } else if (after_read.anon[0] < pages * 95 / 100 || after_read.anon[1] > pages / 100) {
    return report.failure(policy + ": the copied pages are not on node 0");
  }
  return 0;
}

int run(const Programs& p, size_t mib, vt::Report& report) {
  if (int rc = vt::skip_without_node(kCxlNode); rc != 0) return rc;
  if (::geteuid() != 0) {
    report.line("SKIP: checkpoints need root (ptrace, clone3 set_tid)");
    return 77;
  }
  const long pages = static_cast<long>(mib << 20) / 4096;
  // The original on node 1.
  if (!bind_to(kCxlNode)) return report.failure(std::string("set_mempolicy: ") + std::strerror(errno));
  Child target = spawn({p.target, std::to_string(mib)}, false);
  if (target.expect("checkpoint").empty()) return report.failure("the target did not start");
  const NodePages original = numa_pages(target.pid);
  report.line("original (" + std::to_string(mib) + " MiB) " + original.text());
  if (original.anon[1] < pages * 95 / 100) return report.failure("the original's memory is not on node 1");
  // The capture runs bound to node 1 too: the image's page cache lands there.
  ::unlink(kImage);
  const auto start = std::chrono::steady_clock::now();
  Child dump = spawn({p.ckpt, "dump", std::to_string(target.pid), kImage, "--kill"}, false);
  const std::string dumped = dump.line();
  const int dump_status = dump.wait();
  const double capture_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  bind_to(-1);
  if (dump_status != 0) return report.failure("cxlpool-ckpt dump: " + dumped);
  target.wait();
  char line[160];
  std::snprintf(line, sizeof line, "checkpoint on node 1: %.1f ms (%s)", capture_ms, dumped.c_str());
  report.line(line);
  for (const char* policy : {"mow", "copy"}) {
    if (int rc = restore_on_dram(p, policy, pages, report); rc != 0) return rc;
  }
  ::unlink(kImage);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: vm_ckpt_numa TARGET CXLPOOL_CKPT CXLPOOL_RESTORE [--size-mib N] [--report FILE]\n");
    return 2;
  }
  const Programs programs{argv[1], argv[2], argv[3]};
  argv[3] = argv[0];
  auto options = vt::parse_vm_test_options(argc - 3, argv + 3, {.size_mib = 64});
  if (!options) return 2;
  vt::Report report("vm_ckpt_numa", options->report_path);
  return vt::finish(report, run(programs, options->size_mib, report));
}
