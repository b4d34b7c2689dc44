// SPDX-License-Identifier: Apache-2.0
// The command line every seed-corpus generator shares:
//   <tool> DIR          write each seed as DIR/<file>
//   <tool> --check DIR  exit 1 unless DIR holds exactly those bytes
// so a change to an encoder that is not followed by a regenerated corpus
// fails the unit suite.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cxlpool::fuzz {

struct Seed {
  std::string file;
  std::vector<std::byte> bytes;
};

int seed_corpus_main(int argc, char** argv, const std::vector<Seed>& seeds);

}  // namespace cxlpool::fuzz
