// SPDX-License-Identifier: Apache-2.0
// The rules a manifest keeps whatever produced it, checked before a restore
// trusts any address or offset in it.
#pragma once

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

// EBADMSG naming the first broken rule: VMAs page aligned, sorted, not
// overlapping, with file indexes in range for the kinds that have a file;
// runs sorted, not overlapping, each inside one anonymous or private file
// VMA, page aligned in the image and inside its data area; threads present,
// the leader first, tids unique; fds unique with files of their kind;
// hot pages sorted, each inside a run; register blocks of the kernel's sizes;
// thread names within TASK_COMM_LEN without a NUL.
// ENOTSUP for another format version.
[[nodiscard]] Result<void> validate_manifest(const Manifest& manifest);

// ENOTSUP unless `version` is kFormatVersion (the first of validate_manifest's rules).
[[nodiscard]] Result<void> check_format_version(uint32_t version);

}  // namespace cxlpool::ckpt
