// SPDX-License-Identifier: Apache-2.0
// Writes a checkpoint image: page data first, appended as it is copied out of
// the process, then the manifest behind it, then the header, last, so that a
// file cut short anywhere never reads as an image.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::ckpt {

class ImageWriter {
 public:
  // An image in a memfd (sealed against growth and shrinking once finished),
  // e.g. for a daemon that hands it to restorers by descriptor.
  static Result<ImageWriter> to_memfd(const std::string& name);
  // An image in a new file (O_EXCL, mode 0600): a tmpfs or hugetlbfs file on
  // a tier's node, placed by the caller. discard() removes it again.
  static Result<ImageWriter> to_file(const std::string& path);

  ImageWriter(ImageWriter&&) = default;
  ImageWriter& operator=(ImageWriter&&) = default;

  // Appends whole pages of data; returns where they lie in the image.
  // EINVAL when the length is not a multiple of kPageSize; write errors.
  Result<uint64_t> append(std::span<const std::byte> pages);
  // Reserves `bytes` (page multiple) of data and returns its image offset,
  // for a caller that writes them itself (pwrite on fd(), or a mapping).
  Result<uint64_t> reserve(uint64_t bytes);

  // Fills manifest.image_data_offset/bytes, writes the manifest and the
  // header. The writer is done afterwards; fd() stays open.
  Result<void> finish(Manifest& manifest);
  // Drops a half-written image: truncates it and removes the file (to_file).
  void discard();

  int fd() const { return fd_.get(); }
  UniqueFd release_fd() { return std::move(fd_); }
  const std::string& path() const { return path_; }  // empty for a memfd
  uint64_t data_bytes() const { return data_end_ - kDataOffset; }

  // Page data starts right after the header.
  static constexpr uint64_t kDataOffset = 4096;

 private:
  ImageWriter(UniqueFd fd, std::string path, bool memfd) : fd_(std::move(fd)), path_(std::move(path)), memfd_(memfd) {}

  UniqueFd fd_;
  std::string path_;
  bool memfd_ = false;
  bool finished_ = false;
  uint64_t data_end_ = kDataOffset;
};

}  // namespace cxlpool::ckpt
