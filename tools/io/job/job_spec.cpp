// SPDX-License-Identifier: Apache-2.0
#include "job_spec.hpp"

#include "cxlpool/common/enum_names.hpp"

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

namespace {

// fio's spellings; "rw" comes before its alias "readwrite" so that it is the name.
constexpr EnumName<RwMode> kRwModeNames[] = {
    {RwMode::kRead, "read"},
    {RwMode::kWrite, "write"},
    {RwMode::kRandRead, "randread"},
    {RwMode::kRandWrite, "randwrite"},
    {RwMode::kReadWrite, "rw"},
    {RwMode::kReadWrite, "readwrite"},
    {RwMode::kRandReadWrite, "randrw"},
};

}  // namespace

const char* rw_mode_name(RwMode mode) { return enum_name(kRwModeNames, mode, "unknown"); }

std::optional<RwMode> rw_mode_from_name(std::string_view name) { return enum_from_name(kRwModeNames, name); }

}  // namespace cxlpool::io
