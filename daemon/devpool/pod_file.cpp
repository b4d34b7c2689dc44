// SPDX-License-Identifier: Apache-2.0
#include "pod_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::daemon {

Result<PodFile> PodFile::create(const std::filesystem::path& path, const devpool::PodGeometry& geometry) {
  auto layout = devpool::pod_layout(geometry);
  if (!layout) return tl::unexpected(layout.error());
  const std::string name = path.string();
  // The lock is taken on a descriptor of our own before anything is changed,
  // so a daemon that loses the race touches nothing.
  UniqueFd lock(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock) return fail_errno("pod file " + name);
  struct stat st{};
  if (::fstat(lock.get(), &st) != 0) return fail_errno("stat pod file " + name);
  const bool device = S_ISCHR(st.st_mode);
  if (!S_ISREG(st.st_mode) && !(device && name.rfind("/dev/dax", 0) == 0)) {
    return fail(EINVAL, "pod file " + name + ": neither a regular file nor a /dev/dax device");
  }
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    return fail(EBUSY, "pod file " + name + " is in use by another daemon");
  }
  // Whatever a previous run left in a file is dropped: links start from
  // zeroed memory. A device keeps its bytes; formatting rewrites every line
  // the tables use, and each link is formatted when it is handed out.
  if (!device && ::ftruncate(lock.get(), 0) != 0) return fail_errno("empty pod file " + name);
  hal::SharedMemorySpec spec;
  spec.path = name;
  spec.size = layout->total_bytes;
  spec.create = false;
  auto memory = hal::open_shared_memory(device ? "devdax" : "file", spec);
  if (!memory) return tl::unexpected(memory.error());
  if (memory->size() < layout->total_bytes) {
    return fail(EINVAL, "pod file " + name + ": " + std::to_string(memory->size()) + " bytes, the pod needs " +
                            std::to_string(layout->total_bytes));
  }
  if (!memory->info().coherent && geometry.coherence == devpool::Coherence::kCoherent) {
    return fail(EINVAL, "pod file " + name + ": " + memory->info().coherence_reason +
                            "; set [devpool] coherence = \"non-coherent\"");
  }
  PodFile pod(path, std::move(lock), std::move(*memory), geometry, layout->total_bytes);
  if (auto ok = devpool::format_pod(pod.memory(), geometry); !ok) return tl::unexpected(ok.error());
  return pod;
}

void PodFile::remove_name() const {
  if (memory_.info().backend == "file") ::unlink(path_.c_str());
}

std::string PodFile::placement_warning() const {
  const std::string& fs = memory_.info().filesystem;
  if (fs == "tmpfs" || fs == "hugetlbfs" || fs == "devdax" || fs == "memfd") return "";
  return "the pod file is on " + fs + ", not in memory (tmpfs, hugetlbfs or a DAX device): its page cache writes "
         "channel traffic back to the disk; set [devpool] pod_path under /dev/shm or /run";
}

}  // namespace cxlpool::daemon
