// SPDX-License-Identifier: Apache-2.0
#include "weights_loader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <map>

namespace cxlpool::daemon {

Result<ClientFiles> check_client_files(std::vector<std::string> paths, std::vector<UniqueFd> fds) {
  if (fds.size() != paths.size()) {
    return fail(EINVAL, "WeightsLoad carries " + std::to_string(fds.size()) + " descriptors for " +
                            std::to_string(paths.size()) +
                            " files: the client opens each file itself and passes one descriptor per path");
  }
  ClientFiles out;
  std::map<FileIdentity, size_t> seen;
  for (size_t i = 0; i < fds.size(); ++i) {
    const std::string& label = paths[i];
    const int fd = fds[i].get();
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) return fail_errno(label);
    if ((flags & O_PATH) != 0 || (flags & O_ACCMODE) == O_WRONLY) {
      return fail(EBADF, label + ": the descriptor is not open for reading");
    }
    // Cached attributes only: a network or FUSE file system must not make
    // the event loop wait for its server.
    struct statx stx {};
    if (::statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MODE | STATX_INO,
                &stx) != 0) {
      return fail_errno(label);
    }
    if (!S_ISREG(stx.stx_mode)) return fail(EINVAL, label + ": not a regular file");
    const FileIdentity id{makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_ino};
    if (auto [it, fresh] = seen.emplace(id, i); !fresh) {
      return fail(EINVAL, label + ": the same file as " + paths[it->second] + " (listed twice)");
    }
    out.ids.push_back(id);
    out.read_mode &= stx.stx_mode & 0444;
  }
  out.paths = std::move(paths);
  out.fds = std::move(fds);
  return out;
}

Result<OpenedModelFiles> read_model_files(ClientFiles files, const weights::ParseLimits& limits,
                                          const std::atomic<bool>* cancel) {
  OpenedModelFiles out;
  uint64_t header_bytes = 0;
  size_t tensors = 0;
  for (size_t i = 0; i < files.fds.size(); ++i) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      return fail(ECANCELED, "loading was cancelled (the daemon is stopping)");
    }
    // Each file gets what the earlier ones left of the load's budget.
    weights::ParseLimits left = limits;
    left.max_header_bytes = std::min(left.max_header_bytes, kMaxLoadHeaderBytes - header_bytes);
    left.max_tensors = std::min(left.max_tensors, kMaxLoadTensors - tensors);
    auto file = weights::read_loaded_file(files.fds[i].get(), files.paths[i], left);
    if (!file) return tl::unexpected(file.error());
    header_bytes += file->header.header_bytes;
    tensors += file->header.tensors.size();
    out.files.push_back(std::move(*file));
  }
  out.fds = std::move(files.fds);
  return out;
}

Result<void> copy_resident_tensors(const OpenedModelFiles& opened, const weights::RegionPlan& plan,
                                   std::span<std::byte> region, const std::atomic<bool>* cancel) {
  constexpr uint64_t kStep = 8u << 20;
  for (size_t f = 0; f < opened.files.size(); ++f) {
    const auto& file = opened.files[f];
    for (size_t t = 0; t < file.header.tensors.size(); ++t) {
      const uint64_t at = plan.tensor_offset[f][t];
      if (at == weights::kNotResident) continue;
      const auto& tensor = file.header.tensors[t];
      uint64_t done = 0;
      while (done < tensor.bytes()) {
        if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
          return fail(ECANCELED, "loading '" + file.path + "' was cancelled (the daemon is stopping)");
        }
        ssize_t r = ::pread(opened.fds[f].get(), region.data() + at + done, std::min(kStep, tensor.bytes() - done),
                            static_cast<off_t>(file.header.tensor_offset_in_file(tensor) + done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return fail_errno(file.path + ": read tensor '" + tensor.name + "'");
        if (r == 0) return fail(EBADMSG, file.path + ": file shrank while loading '" + tensor.name + "'");
        done += static_cast<uint64_t>(r);
      }
    }
  }
  return {};
}

}  // namespace cxlpool::daemon
