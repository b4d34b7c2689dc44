// SPDX-License-Identifier: Apache-2.0
#include "job_spec.hpp"

namespace cxlpool::io {

bool is_random(RwMode mode) {
  return mode == RwMode::kRandRead || mode == RwMode::kRandWrite || mode == RwMode::kRandReadWrite;
}

bool does_reads(RwMode mode) {
  return mode == RwMode::kRead || mode == RwMode::kRandRead || mode == RwMode::kReadWrite ||
         mode == RwMode::kRandReadWrite;
}

bool does_writes(RwMode mode) {
  return mode == RwMode::kWrite || mode == RwMode::kRandWrite || mode == RwMode::kReadWrite ||
         mode == RwMode::kRandReadWrite;
}

const char* rw_mode_name(RwMode mode) {
  switch (mode) {
    case RwMode::kRead: return "read";
    case RwMode::kWrite: return "write";
    case RwMode::kRandRead: return "randread";
    case RwMode::kRandWrite: return "randwrite";
    case RwMode::kReadWrite: return "rw";
    case RwMode::kRandReadWrite: return "randrw";
  }
  return "unknown";
}

}  // namespace cxlpool::io
