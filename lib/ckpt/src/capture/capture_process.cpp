// SPDX-License-Identifier: Apache-2.0
// The order of a capture: stop every thread; read what /proc and ptrace
// show; classify mappings and descriptors (refusing what cannot be
// restored, before anything is copied); inject the calls for what only the
// process can report; copy the pages and the leased regions' bytes; finish
// the image; let go or kill.
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "capture_steps.hpp"
#include "cxlpool/ckpt/capture.hpp"
#include "remote_syscall.hpp"

namespace cxlpool::ckpt {
namespace {

// What would make the freeze fail obscurely or wait forever: a leader that
// has exited (it never reports a stop) or another tracer.
Result<void> check_traceable(pid_t pid) {
  auto status = detail::read_proc(pid, "status");
  if (!status) return fail(ESRCH, "checkpoint: no process " + std::to_string(pid));
  const auto state = status->find("\nState:\t");
  if (state != std::string::npos && (status->compare(state + 8, 1, "Z") == 0 || status->compare(state + 8, 1, "X") == 0)) {
    return detail::unsupported(pid, "its thread group leader has exited");
  }
  const auto tracer = status->find("\nTracerPid:\t");
  if (tracer != std::string::npos && status->compare(tracer + 12, 2, "0\n") != 0) {
    return fail(EBUSY, "checkpoint: process " + std::to_string(pid) + " is already traced (TracerPid " +
                           status->substr(tracer + 12, status->find('\n', tracer + 12) - tracer - 12) + ")");
  }
  return {};
}

}  // namespace

Result<Manifest> capture_process(pid_t pid, const CaptureOptions& options, ImageWriter& image) {
  using namespace detail;
  if (pid <= 0) return fail(ESRCH, "checkpoint: no process " + std::to_string(pid));
  if (auto t = check_traceable(pid); !t) return tl::unexpected(t.error());
  auto frozen = FrozenProcess::freeze(pid);
  if (!frozen) return tl::unexpected(frozen.error());
  if (options.pidfd >= 0 && ::syscall(SYS_pidfd_send_signal, options.pidfd, 0, nullptr, 0) != 0) {
    return fail(ESRCH, "checkpoint: process " + std::to_string(pid) +
                           " exited before it was frozen (its pid now names another process)");
  }
  Manifest m;
  m.created_unix_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  utsname u{};
  if (::uname(&u) == 0) m.kernel_release = u.release;
  FileTable files(m.files);
  if (auto r = capture_process_files(pid, m.process, files); !r) return tl::unexpected(r.error());
  for (pid_t tid : frozen->tids()) {
    auto t = capture_thread(pid, tid);
    if (!t) return tl::unexpected(t.error());
    m.threads.push_back(std::move(*t));
  }
  if (auto r = capture_shared_pending(pid, m.process); !r) return tl::unexpected(r.error());
  if (auto r = capture_fds(pid, options, files, m); !r) return tl::unexpected(r.error());
  if (auto r = capture_vmas(pid, options, files, m); !r) return tl::unexpected(r.error());
  const bool client = !m.regions.empty() || std::any_of(m.fds.begin(), m.fds.end(), [](const FdEntry& f) {
    return f.kind == FdKind::kCxlpoolSocket;
  });
  if (client) m.cxlpool_socket = options.cxlpool_socket;
  const Vma* vdso = nullptr;
  for (const Vma& v : m.vmas) {
    if (v.kind == VmaKind::kVdso) vdso = &v;
  }
  if (vdso == nullptr) return detail::unsupported(pid, "it has no [vdso] (needed to ask it for its signal state)");
  auto insn = find_syscall_insn(pid, vdso->start, vdso->end);
  if (!insn) return tl::unexpected(insn.error());
  if (auto r = capture_injected(*frozen, *insn, m); !r) return tl::unexpected(r.error());
  if (auto r = capture_pages(pid, m, image); !r) return tl::unexpected(r.error());
  if (auto r = capture_leases(pid, options, m, image); !r) return tl::unexpected(r.error());
  if (auto r = image.finish(m); !r) return tl::unexpected(r.error());
  if (options.max_image_bytes != 0) {
    struct stat st {};
    if (::fstat(image.fd(), &st) != 0) return fail_errno("checkpoint: sizing the image");
    if (static_cast<uint64_t>(st.st_size) > options.max_image_bytes) {
      return fail(EDQUOT, "checkpoint of " + std::to_string(pid) + ": the image is " + std::to_string(st.st_size) +
                              " bytes, more than the " + std::to_string(options.max_image_bytes) +
                              " allowed (the process runs on)");
    }
  }
  if (options.kill_after) {
    frozen->kill();
  } else {
    frozen->release();
  }
  return m;
}

Result<CapturedImage> capture_to_image(pid_t pid, const CaptureOptions& options) {
  auto image = options.image_path.empty() ? ImageWriter::to_memfd("cxlpool-ckpt-" + std::to_string(pid))
                                          : ImageWriter::to_file(options.image_path);
  if (!image) return tl::unexpected(image.error());
  auto manifest = capture_process(pid, options, *image);
  if (!manifest) {
    image->discard();
    return tl::unexpected(manifest.error());
  }
  CapturedImage out;
  out.manifest = std::move(*manifest);
  out.path = image->path();
  out.fd = image->release_fd();
  return out;
}

}  // namespace cxlpool::ckpt
