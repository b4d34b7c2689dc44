// SPDX-License-Identifier: Apache-2.0
// Opens a checkpoint image and checks all of it that is not page data: the
// header, the manifest's checksum, the manifest's rules, and that both agree
// where the data lies. Page data is then read or mapped at the offsets the
// manifest's runs give.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "cxlpool/ckpt/image_header.hpp"
#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::ckpt {

class ImageReader {
 public:
  // Errors: the open's; EBADMSG / ENOTSUP as decode_image_header and
  // decode_manifest, or a manifest checksum that does not match.
  static Result<ImageReader> open(const std::string& path);
  // Takes a descriptor (e.g. a memfd the daemon passed).
  static Result<ImageReader> from_fd(UniqueFd fd);

  const Manifest& manifest() const { return manifest_; }
  const ImageHeader& header() const { return header_; }
  int fd() const { return fd_.get(); }
  uint64_t file_bytes() const { return file_bytes_; }

  // Reads the data of `run` (run.pages * kPageSize bytes) into out.
  Result<void> read_run(const PageRun& run, std::span<std::byte> out) const;

 private:
  ImageReader(UniqueFd fd, uint64_t file_bytes, ImageHeader header, Manifest manifest)
      : fd_(std::move(fd)), file_bytes_(file_bytes), header_(header), manifest_(std::move(manifest)) {}

  UniqueFd fd_;
  uint64_t file_bytes_ = 0;
  ImageHeader header_;
  Manifest manifest_;
};

// The same checks over an image held in memory (tests, the fuzz target).
[[nodiscard]] Result<Manifest> decode_image(std::span<const std::byte> image);

}  // namespace cxlpool::ckpt
