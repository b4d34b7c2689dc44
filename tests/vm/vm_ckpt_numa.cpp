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
#include "support/piped_child.hpp"
#include "vm_options.hpp"

namespace vt = cxlpool::vmtest;
using cxlpool::test::PipedChild;

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

constexpr int kLineTimeoutMs = 60'000;

// The next line of c's output starting with `prefix`; the others are
// appended to *skipped.
std::string expect(PipedChild& c, const std::string& prefix, std::string* skipped) {
  for (std::string l = c.line(kLineTimeoutMs); !l.empty(); l = c.line(kLineTimeoutMs)) {
    if (l.rfind(prefix, 0) == 0) return l;
    *skipped += " | " + l;
  }
  return "";
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
  PipedChild r({p.restore, kImage, "--policy", policy, "--report-fd", "3"}, true);
  bind_to(-1);
  const std::string reported = r.fd3_line(kLineTimeoutMs);
  long original = 0, keeper = 0;
  std::istringstream(reported) >> original >> keeper;
  std::string said;
  const std::string restored = expect(r, "cxlpool-restore: clone 1:", &said);
  const pid_t clone = keeper > 0 ? first_child(static_cast<pid_t>(keeper)) : -1;
  if (clone <= 0 || restored.empty()) {
    for (std::string l = r.line(2000); !l.empty(); l = r.line(2000)) said += " | " + l;
    return report.failure(policy + ": no clone (report '" + reported + "', exit " +
                          std::to_string(r.wait_exit(kLineTimeoutMs)) + ")" + said);
  }
  const size_t in_at = restored.find("restored in ");
  report.line(policy + ": " + (in_at == std::string::npos ? restored : restored.substr(in_at)));
  const NodePages at_restore = numa_pages(clone);
  report.line(policy + " after restore: " + at_restore.text());
  r.send("read");
  expect(r, "read_ms", &said);
  const NodePages after_read = numa_pages(clone);
  report.line(policy + " after a read pass: " + after_read.text());
  r.send("write 10");
  expect(r, "write_ms", &said);
  const NodePages after_write = numa_pages(clone);
  report.line(policy + " after writing 10% of the pages: " + after_write.text());
  r.send("quit");
  const int status = r.wait_exit(kLineTimeoutMs);
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
  PipedChild target({p.target, std::to_string(mib)}, false);
  std::string said;
  if (expect(target, "checkpoint", &said).empty()) return report.failure("the target did not start" + said);
  const NodePages original = numa_pages(target.pid());
  report.line("original (" + std::to_string(mib) + " MiB) " + original.text());
  if (original.anon[1] < pages * 95 / 100) return report.failure("the original's memory is not on node 1");
  // The capture runs bound to node 1 too: the image's page cache lands there.
  ::unlink(kImage);
  const auto start = std::chrono::steady_clock::now();
  PipedChild dump({p.ckpt, "dump", std::to_string(target.pid()), kImage, "--kill"}, false);
  const std::string dumped = dump.line(kLineTimeoutMs);
  const int dump_status = dump.wait_exit(kLineTimeoutMs);
  const double capture_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  bind_to(-1);
  if (dump_status != 0) return report.failure("cxlpool-ckpt dump: " + dumped);
  target.wait_exit(kLineTimeoutMs);
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
