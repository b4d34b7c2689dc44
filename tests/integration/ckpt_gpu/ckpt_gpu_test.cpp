// SPDX-License-Identifier: Apache-2.0
// A CUDA process checkpointed and restored with its device memory
// (docs/ckpt.md "Processes that use a GPU"). The driver's checkpoint API
// (cuCheckpointProcess*, driver 570+) moves the target's device memory into
// its host memory and releases the GPU; lib/ckpt's capture (cxlpool-ckpt
// dump) then records it like any process; cxlpool-restore makes a clone
// (mow) in a new pid namespace; the driver restores the clone's device
// memory and the clone compares its buffer with the pattern byte for byte.
//
// Steps, each printed as it runs, each failure naming the step and the
// driver's error: start the target, lock, checkpoint, list what the target
// still holds of the GPU, capture (killing the target), restore the clone,
// find its host pid, cuCheckpointProcessRestore + Unlock on it, verify.
// Should the driver fail the clone (a driver that names the process by its pid
// on both sides would not match a clone whose pid differs between its
// namespace and the host's), the same image is restored again with
// `cxlpool-restore --host-pids` (the clone and its threads get their original
// pids in the host's namespace too) and the driver is asked again.
//
// Exit 0 passed, 1 failed, 77 skipped (no driver, no device, a driver without
// the checkpoint API, not root) with the reason. Environment: CKPT_GPU_TARGET,
// CXLPOOL_CKPT, CXLPOOL_RESTORE (the programs), CKPT_GPU_BYTES (device
// buffer, default 64 MiB), CKPT_GPU_IMAGE_DIR (default /dev/shm),
// CKPT_GPU_TARGET_FDS=1 (the target also holds an eventfd, a semaphore
// eventfd, a pipe with bytes in it, a socketpair and a listening abstract
// seqpacket socket named like the driver's; the clone must read back what
// the original held and accept a connection to that name). Before the capture, every descriptor of the
// target is listed with what the capture decides about it.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cxlpool/ckpt/capture.hpp"
#include "driver_api.hpp"
#include "support/piped_child.hpp"

namespace {

using cxlpool::cuda::DriverApi;
using cxlpool::test::PipedChild;

constexpr int kSkip = 77;
constexpr int kStartTimeoutMs = 120'000;  // the target's cuInit and allocation
constexpr int kStepTimeoutMs = 60'000;

int skip(const std::string& why) {
  std::printf("SKIP: %s\n", why.c_str());
  return kSkip;
}

int failed(const std::string& step, const std::string& why) {
  std::printf("FAIL at step '%s': %s\n", step.c_str(), why.c_str());
  return 1;
}

void step(const std::string& text) {
  std::printf("step: %s\n", text.c_str());
  std::fflush(stdout);
}

std::string cu_text(const DriverApi& api, const char* call, CUresult r) {
  return cxlpool::cuda::cu_error(api, call, r).message;
}

const char* state_name(CUprocessState s) {
  switch (s) {
    case CU_PROCESS_STATE_RUNNING: return "RUNNING";
    case CU_PROCESS_STATE_LOCKED: return "LOCKED";
    case CU_PROCESS_STATE_CHECKPOINTED: return "CHECKPOINTED";
    case CU_PROCESS_STATE_FAILED: return "FAILED";
  }
  return "unknown";
}

// "CHECKPOINTED", or the driver's error for the query.
std::string state_of(const DriverApi& api, pid_t pid) {
  CUprocessState s = CU_PROCESS_STATE_RUNNING;
  const CUresult r = api.checkpoint_process_get_state(pid, &s);
  return r == CUDA_SUCCESS ? state_name(s) : cu_text(api, "checkpoint_process_get_state", r);
}

// The driver's restore thread of pid (informational), or its error.
std::string restore_thread_of(const DriverApi& api, pid_t pid) {
  int tid = -1;
  const CUresult r = api.checkpoint_process_get_restore_thread_id(pid, &tid);
  return r == CUDA_SUCCESS ? std::to_string(tid) : cu_text(api, "checkpoint_process_get_restore_thread_id", r);
}

// Lines until one starts with `prefix` (the others, e.g. cxlpool-restore's
// report lines, are echoed); "" with *why set on timeout or end of output.
std::string expect_line(PipedChild& c, const std::string& prefix, std::string* why,
                        int timeout_ms = kStepTimeoutMs) {
  for (;;) {
    bool ended = false;
    std::string line = c.line(timeout_ms, &ended);
    if (line.empty() && ended) {
      *why = "its output ended (exit status " + std::to_string(c.wait_exit(kStepTimeoutMs)) + ")";
      return "";
    }
    if (line.empty()) {
      *why = "no line starting with '" + prefix + "' within " + std::to_string(timeout_ms / 1000) + " s";
      return "";
    }
    std::printf("  | %s\n", line.c_str());
    if (line.rfind(prefix, 0) == 0) return line;
    if (line.rfind("error ", 0) == 0) {
      *why = line;
      return "";
    }
  }
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Where each thread of `pid` waits (state, wchan, the syscall file: number
// and arguments) and which unix sockets named cuda-uvmfd exist: what the
// driver's restore thread is doing when the driver cannot reach it.
void print_threads(const char* who, pid_t pid) {
  const std::string base = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(base.c_str());
  if (dir == nullptr) return;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string t = base + "/" + e->d_name;
    std::string stat = read_text(t + "/stat");
    const size_t close = stat.rfind(')');
    const std::string state = close == std::string::npos ? "?" : stat.substr(close + 2, 1);
    std::string sys = read_text(t + "/syscall");
    if (!sys.empty() && sys.back() == '\n') sys.pop_back();
    std::printf("  %s thread %s: state %s, wchan %s, syscall %s, comm %s", who, e->d_name, state.c_str(),
                read_text(t + "/wchan").c_str(), sys.c_str(), read_text(t + "/comm").c_str());
  }
  ::closedir(dir);
  std::istringstream unix_table(read_text("/proc/" + std::to_string(pid) + "/net/unix"));
  for (std::string line; std::getline(unix_table, line);) {
    if (line.find("cuda-uvmfd") != std::string::npos) std::printf("  unix: %s\n", line.c_str());
  }
}

// What a process still holds of the GPU: fds and mappings naming /dev/nvidia*
// (and, to say exactly what a capture would meet, every fd that is not a
// regular file, a directory or /dev/null-like).
std::vector<std::string> gpu_leftovers(pid_t pid, std::vector<std::string>* other_fds) {
  std::vector<std::string> left;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = ::opendir(fd_dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[512] = {};
      const ssize_t n = ::readlink((fd_dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      const std::string t(target, static_cast<size_t>(n));
      const std::string entry = std::string("fd ") + e->d_name + " -> " + t;
      if (t.rfind("/dev/nvidia", 0) == 0) {
        left.push_back(entry);
      } else if (t.empty() || t[0] != '/' || t.rfind("/dev/", 0) == 0) {
        other_fds->push_back(entry);
      }
    }
    ::closedir(d);
  }
  std::istringstream maps(read_text("/proc/" + std::to_string(pid) + "/maps"));
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/dev/nvidia") != std::string::npos) left.push_back("mapping " + line);
  }
  return left;
}

// The clone a keeper made: its host pid, from the keeper's children.
pid_t child_of(pid_t keeper) {
  std::istringstream in(read_text("/proc/" + std::to_string(keeper) + "/task/" + std::to_string(keeper) + "/children"));
  pid_t pid = -1;
  in >> pid;
  return pid;
}

std::string status_field(pid_t pid, const std::string& field) {
  std::istringstream in(read_text("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) {
      const size_t start = line.find_first_not_of(" \t", field.size() + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  }
  return "";
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

struct Programs {
  std::string target, ckpt, restore;
};

// Restores one clone of `image` and has the driver give it its device memory
// back, then checks its buffer. Returns 0, or 1 with the failure printed;
// *clone_failed says that the clone was made and what failed was the
// driver's part or the clone's answer (worth another try with --host-pids).
int restore_and_verify(const DriverApi& api, const Programs& p, const std::string& image, bool host_pids,
                       const std::string& fds_expect, bool* clone_failed) {
  *clone_failed = false;
  const std::string mode = host_pids ? " --host-pids" : "";
  step("restore the image: cxlpool-restore " + image + " --policy mow --report-fd 3" + mode);
  std::vector<std::string> argv = {p.restore, image, "--policy", "mow", "--report-fd", "3"};
  if (host_pids) argv.push_back("--host-pids");
  PipedChild restore(argv, true);
  if (restore.pid() <= 0) return failed("restore", std::string("fork: ") + std::strerror(errno));
  const std::string report = restore.fd3_line(kStepTimeoutMs);
  if (report.empty()) {
    std::string rest;
    for (std::string line = restore.line(2000); !line.empty(); line = restore.line(2000)) rest += "\n  | " + line;
    return failed("restore", "cxlpool-restore reported no clone (exit status " +
                                 std::to_string(restore.wait_exit(kStepTimeoutMs)) + ")" + rest);
  }
  pid_t original = -1, keeper = -1;
  std::istringstream(report) >> original >> keeper;
  const pid_t clone = child_of(keeper);
  if (clone <= 0) return failed("find the clone", "keeper " + std::to_string(keeper) + " has no child");
  const std::string nspid = status_field(clone, "NSpid");
  std::printf("clone: host pid %d, NSpid %s (original pid %d), keeper host pid %d, Tgid %s\n", clone,
              nspid.c_str(), original, keeper, status_field(clone, "Tgid").c_str());
  std::printf("clone's state per the driver: %s, restore thread %s\n", state_of(api, clone).c_str(),
              restore_thread_of(api, clone).c_str());
  print_threads("clone", clone);
  *clone_failed = true;

  step("cuCheckpointProcessRestore(" + std::to_string(clone) + ") on the clone");
  CUcheckpointRestoreArgs restore_args{};
  if (const CUresult r = api.checkpoint_process_restore(clone, &restore_args); r != CUDA_SUCCESS) {
    const std::string why = cu_text(api, "checkpoint_process_restore", r);
    std::printf("clone's state after the refusal: %s\n", state_of(api, clone).c_str());
    restore.stop();  // its CUDA state is the checkpoint's: nothing to end cleanly
    if (!host_pids) {
      return failed("cuCheckpointProcessRestore on the clone (host pid " + std::to_string(clone) + ", pid " +
                        std::to_string(original) + " in its own pid namespace)",
                    why);
    }
    return failed("cuCheckpointProcessRestore on the clone restored with --host-pids (pid " + std::to_string(clone) +
                      " in both namespaces)",
                  why);
  }
  std::printf("clone's state: %s\n", state_of(api, clone).c_str());
  step("cuCheckpointProcessUnlock(" + std::to_string(clone) + ")");
  CUcheckpointUnlockArgs unlock_args{};
  if (const CUresult r = api.checkpoint_process_unlock(clone, &unlock_args); r != CUDA_SUCCESS) {
    const std::string why = cu_text(api, "checkpoint_process_unlock", r);
    restore.stop();
    return failed("cuCheckpointProcessUnlock on the clone", why);
  }
  std::printf("clone's state: %s\n", state_of(api, clone).c_str());

  step("the clone copies its device buffer back and compares it with the pattern");
  if (!restore.send("verify")) return failed("verify", "cannot write to the clone's stdin");
  std::string why;
  const std::string verdict = expect_line(restore, "verify ", &why);
  if (verdict.empty()) {
    restore.stop();
    return failed("verify", "the clone did not answer: " + why);
  }
  if (verdict.rfind("verify ok ", 0) != 0) return failed("verify", verdict);
  if (!fds_expect.empty()) {
    step("the clone reads its eventfds, pipe and socketpair and accepts on its listener");
    if (!restore.send("fds")) return failed("fds", "cannot write to the clone's stdin");
    const std::string fds = expect_line(restore, "fds ", &why);
    if (fds.empty()) {
      restore.stop();
      return failed("fds", "the clone did not answer: " + why);
    }
    if (fds.substr(4) != fds_expect) {
      restore.stop();
      return failed("fds", "the clone's descriptors hold '" + fds.substr(4) + "', the original's held '" + fds_expect +
                               "'");
    }
  }
  restore.send("exit");
  const int status = restore.wait_exit(kStepTimeoutMs);
  if (status != 0) return failed("clone exit", "cxlpool-restore exited " + std::to_string(status));
  *clone_failed = false;
  return 0;
}

int run() {
  auto loaded = cxlpool::cuda::load_driver_api();
  if (!loaded) return skip(loaded.error().message);
  auto inited = cxlpool::cuda::init_driver_api();
  if (!inited) return skip(inited.error().message);
  const DriverApi& api = **inited;
  int devices = 0;
  if (api.device_get_count(&devices) != CUDA_SUCCESS || devices == 0) return skip("no CUDA devices");
  if (auto ok = cxlpool::cuda::checkpoint_api_available(api); !ok) return skip(ok.error().message);
  if (::geteuid() != 0) {
    return skip("needs root: the capture ptraces the target, cxlpool-restore needs clone3 set_tid and PR_SET_MM_MAP");
  }
  const Programs p{env_or("CKPT_GPU_TARGET", ""), env_or("CXLPOOL_CKPT", ""), env_or("CXLPOOL_RESTORE", "")};
  for (const std::string& program : {p.target, p.ckpt, p.restore}) {
    if (program.empty() || ::access(program.c_str(), X_OK) != 0) {
      return failed("setup", "CKPT_GPU_TARGET, CXLPOOL_CKPT and CXLPOOL_RESTORE must name programs (got '" + program +
                                 "')");
    }
  }
  std::printf("driver: CUDA %d.%d, %d device(s)\n", api.driver_version / 1000, api.driver_version % 1000 / 10, devices);
  const std::string bytes = env_or("CKPT_GPU_BYTES", std::to_string(64u << 20));
  const std::string image =
      env_or("CKPT_GPU_IMAGE_DIR", "/dev/shm") + "/cxlpool-ckpt-gpu-" + std::to_string(::getpid()) + ".img";

  step("start the target: " + p.target + " " + bytes);
  PipedChild target({p.target, bytes}, false);
  if (target.pid() <= 0) return failed("start the target", std::string("fork: ") + std::strerror(errno));
  std::string why;
  // CKPT_GPU_TARGET_FDS=1: the target holds an eventfd, a pipe with bytes in
  // it and a socketpair besides the driver's, and says what they hold.
  std::string fds_expect;
  if (env_or("CKPT_GPU_TARGET_FDS", "") == "1") {
    const std::string line = expect_line(target, "fds-expect ", &why, kStartTimeoutMs);
    if (line.empty()) return failed("start the target", why);
    fds_expect = line.substr(11);
  }
  if (expect_line(target, "ready ", &why, kStartTimeoutMs).empty()) return failed("start the target", why);
  const pid_t pid = target.pid();

  std::printf("target pid %d: driver state %s, restore thread %s, %s threads\n", pid, state_of(api, pid).c_str(),
              restore_thread_of(api, pid).c_str(), status_field(pid, "Threads").c_str());
  print_threads("running target", pid);

  step("cuCheckpointProcessLock(" + std::to_string(pid) + ", timeout 30 s)");
  CUcheckpointLockArgs lock_args{};
  lock_args.timeoutMs = 30'000;
  if (const CUresult r = api.checkpoint_process_lock(pid, &lock_args); r != CUDA_SUCCESS) {
    return failed("cuCheckpointProcessLock", cu_text(api, "checkpoint_process_lock", r));
  }
  std::printf("target's state: %s\n", state_of(api, pid).c_str());
  step("cuCheckpointProcessCheckpoint(" + std::to_string(pid) + ")");
  CUcheckpointCheckpointArgs checkpoint_args{};
  if (const CUresult r = api.checkpoint_process_checkpoint(pid, &checkpoint_args); r != CUDA_SUCCESS) {
    const std::string text = cu_text(api, "checkpoint_process_checkpoint", r);
    CUcheckpointUnlockArgs unlock_args{};
    api.checkpoint_process_unlock(pid, &unlock_args);
    return failed("cuCheckpointProcessCheckpoint", text);
  }
  std::printf("target's state: %s, VmRSS %s, %s threads\n", state_of(api, pid).c_str(),
              status_field(pid, "VmRSS").c_str(), status_field(pid, "Threads").c_str());

  std::vector<std::string> other_fds;
  const std::vector<std::string> left = gpu_leftovers(pid, &other_fds);
  for (const std::string& e : left) std::printf("  still holds the GPU: %s\n", e.c_str());
  for (const std::string& e : other_fds) std::printf("  other descriptor: %s\n", e.c_str());
  if (left.empty()) std::printf("target holds no /dev/nvidia* descriptor or mapping any more\n");
  print_threads("checkpointed target", pid);
  // What the capture will decide about each descriptor, all of them (the
  // capture itself stops at the first it refuses).
  if (auto verdicts = cxlpool::ckpt::describe_fds(pid, {})) {
    for (const auto& v : *verdicts) {
      std::printf("  capture of fd %d: %s: %s\n", v.fd, v.supported ? "supported" : "refused", v.what.c_str());
    }
  } else {
    std::printf("  the capture's view of the descriptors: %s\n", verdicts.error().message.c_str());
  }

  step("capture: cxlpool-ckpt dump " + std::to_string(pid) + " " + image + " --kill");
  PipedChild dump({p.ckpt, "dump", std::to_string(pid), image, "--kill"}, false);
  std::string dump_output;
  for (bool ended = false; !ended;) {
    std::string line = dump.line(kStepTimeoutMs, &ended);
    if (!line.empty()) dump_output += "\n  | " + line;
    if (line.empty() && !ended) break;
  }
  // -1: still running after the step's time, killed.
  const int dump_status = dump.wait_exit(1000);
  std::printf("cxlpool-ckpt exited %d%s\n", dump_status, dump_output.c_str());
  if (dump_status != 0) {
    // The target lives on: give it its GPU back and check it in place, which
    // tells a driver problem from a capture refusal.
    ::unlink(image.c_str());
    CUcheckpointRestoreArgs restore_args{};
    CUcheckpointUnlockArgs unlock_args{};
    const CUresult rr = api.checkpoint_process_restore(pid, &restore_args);
    const CUresult ru = rr == CUDA_SUCCESS ? api.checkpoint_process_unlock(pid, &unlock_args) : rr;
    std::string in_place = "the target could not be restored in place: " +
                           cu_text(api, rr == CUDA_SUCCESS ? "checkpoint_process_unlock" : "checkpoint_process_restore",
                                   ru);
    if (ru == CUDA_SUCCESS && target.send("verify")) {
      std::string verify_why;
      const std::string verdict = expect_line(target, "verify ", &verify_why);
      in_place = "restored in place, the target says: " + (verdict.empty() ? verify_why : verdict);
    }
    std::string leftovers;
    for (const std::string& e : left) leftovers += "; " + e;
    return failed("capture", "cxlpool-ckpt dump exited " + std::to_string(dump_status) + dump_output + leftovers +
                                 "\n  (" + in_place + ")");
  }
  const int target_status = target.wait_exit(kStepTimeoutMs);
  std::printf("target ended with status %d (killed by the capture)\n", target_status);
  struct stat st{};
  if (::stat(image.c_str(), &st) == 0) std::printf("image: %s, %lld MiB\n", image.c_str(), static_cast<long long>(st.st_size >> 20));

  bool clone_failed = false;
  int result = restore_and_verify(api, p, image, false, fds_expect, &clone_failed);
  if (result != 0 && clone_failed) {
    // The clone's pid differs between its namespace and this one: a driver
    // that names the process by pid on both sides cannot match them.
    std::printf("the clone in a new pid namespace failed (above); again with its original pids here too\n");
    result = restore_and_verify(api, p, image, true, fds_expect, &clone_failed);
    if (result == 0) {
      std::printf("PASSED only with --host-pids: the driver needs the clone's host pid to be its original pid\n");
    }
  }
  ::unlink(image.c_str());
  if (result == 0) {
    std::printf("PASS: the clone's %s bytes of device memory and its 2 MiB of shared anonymous memory match their "
                "patterns\n", bytes.c_str());
  }
  return result;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  return run();
}
