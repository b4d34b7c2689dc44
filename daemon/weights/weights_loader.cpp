// SPDX-License-Identifier: Apache-2.0
#include "weights_loader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace cxlpool::daemon {
namespace {

// The same rule the kernel applies for a plain open(O_RDONLY), without ACLs.
bool may_read(const struct stat& st, const Requester& who) {
  if (who.admin || who.uid == 0) return true;
  if (st.st_uid == who.uid) return (st.st_mode & S_IRUSR) != 0;
  bool in_group = st.st_gid == who.gid ||
                  std::find(who.groups.begin(), who.groups.end(), st.st_gid) != who.groups.end();
  if (in_group) return (st.st_mode & S_IRGRP) != 0;
  return (st.st_mode & S_IROTH) != 0;
}

}  // namespace

Result<OpenedModelFiles> open_model_files(const std::vector<std::string>& paths, const Requester& who) {
  OpenedModelFiles out;
  for (const auto& path : paths) {
    for (const auto& seen : out.files) {
      if (seen.path == path) return fail(EINVAL, path + ": listed twice");
    }
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!fd) return fail_errno(path);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return fail_errno(path);
    if (!S_ISREG(st.st_mode)) return fail(EINVAL, path + ": not a regular file");
    if (!may_read(st, who)) return fail(EACCES, path + ": the client may not read it");
    auto file = weights::read_loaded_file(fd.get(), path);
    if (!file) return tl::unexpected(file.error());
    out.fds.push_back(std::move(fd));
    out.files.push_back(std::move(*file));
  }
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
