// SPDX-License-Identifier: Apache-2.0
#include "hot_record.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "cxlpool/ckpt/hot_set.hpp"
#include "cxlpool/ckpt/restorer.hpp"

namespace cxlpool::ckpt {
namespace {

Result<size_t> save(const ImageReader& image, HotSource source, const std::vector<uint64_t>& recorded,
                    const std::string& path) {
  HotSet set;
  set.source = source;
  set.manifest_crc32c = image.header().manifest_crc32c;
  set.pages = pages_in_runs(image.manifest(), recorded);
  if (auto ok = write_hot_set_file(path, set); !ok) return tl::unexpected(ok.error());
  return set.pages.size();
}

}  // namespace

Result<void> load_hot_set(const std::string& path, const ImageReader& image, Manifest& manifest) {
  auto set = read_hot_set_file(path);
  if (!set) return tl::unexpected(set.error());
  return apply_hot_set(manifest, image.header().manifest_crc32c, *set);
}

Result<UniqueFd> create_fault_record() {
  UniqueFd fd(::memfd_create("cxlpool-fault-record", MFD_CLOEXEC));
  if (!fd) return fail_errno("memfd_create for the fault record");
  return fd;
}

Result<size_t> save_fault_record(int record, const ImageReader& image, const std::string& path) {
  struct stat st {};
  if (::fstat(record, &st) != 0) return fail_errno("stat the fault record");
  std::vector<uint64_t> order(static_cast<size_t>(st.st_size) / sizeof(uint64_t));
  const size_t want = order.size() * sizeof(uint64_t);
  if (::pread(record, order.data(), want, 0) != static_cast<ssize_t>(want)) return fail_errno("read the fault record");
  return save(image, HotSource::kFaults, order, path);
}

Result<size_t> save_written_pages(pid_t keeper, const ImageReader& image, const std::string& path) {
  auto pid = clone_pid(keeper);
  if (!pid) return tl::unexpected(pid.error());
  auto written = written_image_pages(*pid, image.manifest());
  if (!written) return tl::unexpected(written.error());
  return save(image, HotSource::kWritten, *written, path);
}

}  // namespace cxlpool::ckpt
