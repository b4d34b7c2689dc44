// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/ckpt/image_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "image_manifest_check.hpp"

namespace cxlpool::ckpt {
namespace {

Result<void> pread_all(int fd, std::span<std::byte> out, uint64_t offset, const char* what) {
  while (!out.empty()) {
    const ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_errno(std::string("checkpoint image: read ") + what);
    if (n == 0) return fail(EBADMSG, std::string("checkpoint image: file ends inside the ") + what);
    out = out.subspan(static_cast<std::size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return {};
}

}  // namespace

Result<ImageReader> ImageReader::open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail_errno("checkpoint image: open " + path);
  auto reader = from_fd(std::move(fd));
  if (!reader) return fail(reader.error().code, reader.error().message + " (" + path + ")");
  return reader;
}

Result<ImageReader> ImageReader::from_fd(UniqueFd fd) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail_errno("checkpoint image: stat");
  if (!S_ISREG(st.st_mode)) return fail(EBADMSG, "checkpoint image: not a regular file");
  const auto file_bytes = static_cast<uint64_t>(st.st_size);
  ImageHeaderBytes header_bytes{};
  if (file_bytes < kImageHeaderBytes) return fail(EBADMSG, "checkpoint image: shorter than its 4096-byte header");
  if (auto r = pread_all(fd.get(), header_bytes, 0, "header"); !r) return tl::unexpected(r.error());
  auto header = decode_image_header(header_bytes, file_bytes);
  if (!header) return tl::unexpected(header.error());
  std::vector<std::byte> bytes(header->manifest_bytes);
  if (auto r = pread_all(fd.get(), bytes, header->manifest_offset, "manifest"); !r) return tl::unexpected(r.error());
  auto manifest = detail::check_image_manifest(*header, bytes);
  if (!manifest) return tl::unexpected(manifest.error());
  return ImageReader(std::move(fd), file_bytes, *header, std::move(*manifest));
}

Result<void> ImageReader::read_run(const PageRun& run, std::span<std::byte> out) const {
  if (out.size() != run.pages * kPageSize) return fail(EINVAL, "checkpoint image: buffer is not the run's size");
  return pread_all(fd_.get(), out, run.image_offset, "page data");
}

}  // namespace cxlpool::ckpt
