// SPDX-License-Identifier: Apache-2.0
// Reading a model's files for the daemon: each opened once, checked readable
// by the requesting client (the daemon reads as root; a client must not get
// a file it could not read itself), its header validated, then the resident
// tensors copied into the region.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "../region_pool.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/weights/region_layout.hpp"

namespace cxlpool::daemon {

struct OpenedModelFiles {
  std::vector<UniqueFd> fds;
  std::vector<weights::LoadedFile> files;
};

// EACCES when `who` may not read a file, EBADMSG when one is not a valid
// safetensors file (the message names the file and the reason).
Result<OpenedModelFiles> open_model_files(const std::vector<std::string>& paths, const Requester& who);

// Copies every resident tensor into `region` at its planned offset. Runs on
// the weights service's worker thread: ECANCELED once *cancel is set
// (checked every few MiB, so a stopping daemon does not wait for a whole
// model).
Result<void> copy_resident_tensors(const OpenedModelFiles& opened, const weights::RegionPlan& plan,
                                   std::span<std::byte> region, const std::atomic<bool>* cancel = nullptr);

}  // namespace cxlpool::daemon
