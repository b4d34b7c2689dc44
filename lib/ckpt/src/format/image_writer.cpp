// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/ckpt/image_writer.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cxlpool/ckpt/image_header.hpp"
#include "cxlpool/ckpt/manifest_codec.hpp"
#include "cxlpool/common/crc32c.hpp"

namespace cxlpool::ckpt {
namespace {

Result<void> pwrite_all(int fd, std::span<const std::byte> data, uint64_t offset, const std::string& what) {
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail_errno("checkpoint image: write " + what);
    }
    data = data.subspan(static_cast<std::size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return {};
}

}  // namespace

Result<ImageWriter> ImageWriter::to_memfd(const std::string& name) {
  UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return fail_errno("checkpoint image: memfd_create " + name);
  return ImageWriter(std::move(fd), "", true);
}

Result<ImageWriter> ImageWriter::to_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return fail_errno("checkpoint image: create " + path);
  return ImageWriter(std::move(fd), path, false);
}

Result<uint64_t> ImageWriter::reserve(uint64_t bytes) {
  if (bytes % kPageSize != 0) return fail(EINVAL, "checkpoint image: page data of a length that is not whole pages");
  if (finished_ || !fd_) return fail(EINVAL, "checkpoint image: written after finish");
  const uint64_t at = data_end_;
  if (::ftruncate(fd_.get(), static_cast<off_t>(at + bytes)) != 0) return fail_errno("checkpoint image: grow");
  data_end_ += bytes;
  return at;
}

Result<uint64_t> ImageWriter::append(std::span<const std::byte> pages) {
  if (pages.size() % kPageSize != 0) {
    return fail(EINVAL, "checkpoint image: page data of a length that is not whole pages");
  }
  if (finished_ || !fd_) return fail(EINVAL, "checkpoint image: written after finish");
  const uint64_t at = data_end_;
  if (auto w = pwrite_all(fd_.get(), pages, at, "page data"); !w) return tl::unexpected(w.error());
  data_end_ += pages.size();
  return at;
}

Result<void> ImageWriter::finish(Manifest& manifest) {
  if (finished_ || !fd_) return fail(EINVAL, "checkpoint image: finished twice");
  manifest.image_data_offset = kDataOffset;
  manifest.image_data_bytes = data_bytes();
  const std::vector<std::byte> bytes = encode_manifest(manifest);
  if (bytes.size() > kMaxManifestBytes) return fail(EFBIG, "checkpoint image: manifest larger than 256 MiB");
  ImageHeader h;
  h.version = kFormatVersion;
  h.data_offset = kDataOffset;
  h.data_bytes = data_bytes();
  h.manifest_offset = data_end_;
  h.manifest_bytes = bytes.size();
  h.manifest_crc32c = crc32c(bytes);
  if (auto w = pwrite_all(fd_.get(), bytes, h.manifest_offset, "manifest"); !w) return w;
  // The header goes last: until it is in place the file is not an image.
  const ImageHeaderBytes header = encode_image_header(h);
  if (auto w = pwrite_all(fd_.get(), header, 0, "header"); !w) return w;
  if (memfd_) {
    // Restorers map the image; a memfd that can no longer change size
    // cannot SIGBUS them.
    ::fcntl(fd_.get(), F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  } else if (::fsync(fd_.get()) != 0 && errno != EINVAL) {
    return fail_errno("checkpoint image: fsync " + path_);
  }
  finished_ = true;
  return {};
}

void ImageWriter::discard() {
  if (fd_) (void)::ftruncate(fd_.get(), 0);
  if (!path_.empty()) ::unlink(path_.c_str());
  fd_.reset();
  finished_ = true;
}

}  // namespace cxlpool::ckpt
