// SPDX-License-Identifier: Apache-2.0
// The pod region's file: created (or taken over) by the daemon, locked so
// that a second daemon cannot share it, sized, mapped and formatted. Engines
// get its descriptor with SCM_RIGHTS and map it themselves.
#pragma once

#include <filesystem>
#include <span>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/devpool/pod_region.hpp"

namespace cxlpool::daemon {

class PodFile {
 public:
  // Opens `path` (O_NOFOLLOW; a regular file, created mode 0600 when
  // missing), takes an exclusive lock, gives it the layout's size (sparse:
  // a slot costs memory only once a link is formatted in it) and writes the
  // header and empty tables. EBUSY when another daemon holds it.
  static Result<PodFile> create(const std::filesystem::path& path, const devpool::PodGeometry& geometry);

  int fd() const { return fd_.get(); }
  std::span<std::byte> memory() const { return {mapping_.data(), mapping_.length()}; }
  const devpool::PodGeometry& geometry() const { return geometry_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  UniqueFd fd_;
  Mapping mapping_;
  devpool::PodGeometry geometry_;
};

}  // namespace cxlpool::daemon
