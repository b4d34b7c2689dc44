// SPDX-License-Identifier: Apache-2.0
#include "pod_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cxlpool::daemon {

Result<PodFile> PodFile::create(const std::filesystem::path& path, const devpool::PodGeometry& geometry) {
  auto layout = devpool::pod_layout(geometry);
  if (!layout) return tl::unexpected(layout.error());
  PodFile pod;
  pod.path_ = path;
  pod.geometry_ = geometry;
  const std::string name = path.string();
  pod.fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!pod.fd_) return fail_errno("pod file " + name);
  struct stat st{};
  if (::fstat(pod.fd_.get(), &st) != 0) return fail_errno("stat pod file " + name);
  if (!S_ISREG(st.st_mode)) return fail(EINVAL, "pod file " + name + ": not a regular file");
  if (::flock(pod.fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    return fail(EBUSY, "pod file " + name + " is in use by another daemon");
  }
  // Whatever a previous run left is dropped: links start from zeroed memory.
  if (::ftruncate(pod.fd_.get(), 0) != 0 || ::ftruncate(pod.fd_.get(), static_cast<off_t>(layout->total_bytes)) != 0) {
    return fail_errno("size pod file " + name);
  }
  auto mapping = Mapping::map(layout->total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, pod.fd_.get());
  if (!mapping) return tl::unexpected(mapping.error());
  pod.mapping_ = std::move(*mapping);
  if (auto ok = devpool::format_pod(pod.memory(), geometry); !ok) return tl::unexpected(ok.error());
  return pod;
}

}  // namespace cxlpool::daemon
