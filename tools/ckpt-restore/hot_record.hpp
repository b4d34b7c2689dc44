// SPDX-License-Identifier: Apache-2.0
// cxlpool-restore's hot set files (docs/ckpt.md "Hot sets"): reading one for
// a hybrid restore, and recording one from the first clone of a moa restore
// (its faults) or a mow restore (the pages it wrote).
#pragma once

#include <sys/types.h>

#include <string>

#include "cxlpool/ckpt/image_reader.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::ckpt {

// Reads the hot set at `path` into `manifest` (a copy of image's).
Result<void> load_hot_set(const std::string& path, const ImageReader& image, Manifest& manifest);

// A memfd the keeper writes the fault order into (CloneOptions::fault_record_fd).
Result<UniqueFd> create_fault_record();
// Saves the fault order in `record` as a hot set at `path`; returns the pages kept.
Result<size_t> save_fault_record(int record, const ImageReader& image, const std::string& path);
// Saves the pages the clone of `keeper` has written so far at `path`.
Result<size_t> save_written_pages(pid_t keeper, const ImageReader& image, const std::string& path);

}  // namespace cxlpool::ckpt
