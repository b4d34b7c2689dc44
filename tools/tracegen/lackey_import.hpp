// SPDX-License-Identifier: Apache-2.0
// Reads the memory trace valgrind's lackey tool writes with --trace-mem=yes:
//
//   I  0400d7d4,8     an instruction fetch of 8 bytes
//    L 0421fb10,4     a load
//    S 7ff000c18,8    a store
//    M 0421fb10,4     a modify (load and store of the same bytes)
//
// plus valgrind's own "==pid==" / "--pid--" lines, which are skipped. Time is
// the count of instructions executed so far (I lines) x ns per instruction.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string_view>

#include "cxlpool/common/result.hpp"

namespace cxlpool::tracegen {

struct LackeyAccess {
  std::uint64_t instruction = 0;  // instructions executed before it
  std::uint64_t address = 0;
  std::uint32_t size = 0;
  bool is_write = false;   // S and M
  bool is_fetch = false;   // I
};

// Parses one line. Returns false for lines that carry no access (valgrind's
// messages, blank lines); an error for a malformed access line.
Result<bool> parse_lackey_line(std::string_view line, LackeyAccess& out);

struct LackeyStats {
  std::uint64_t lines = 0, instructions = 0, loads = 0, stores = 0, modifies = 0;
  bool stopped_early = false;  // max_instructions reached
};

// Reads lines from `in` until EOF or `max_instructions` (0: no limit) and
// calls `sink` for each access (instruction fetches included: the sink
// decides). Errors name the 1-based line.
Result<LackeyStats> read_lackey(std::FILE* in, std::uint64_t max_instructions,
                                const std::function<Result<void>(const LackeyAccess&)>& sink);

}  // namespace cxlpool::tracegen
