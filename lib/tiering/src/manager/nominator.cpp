// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/manager/nominator.hpp"

#include <bit>

namespace cxlpool::tiering::manager {

Result<std::unique_ptr<Nominator>> make_nominator(const M5Config& config) {
  return config.nominator == NominatorMode::kHwt ? make_hwt_nominator(config) : make_hpt_nominator(config);
}

PageClass classify(std::uint64_t words, std::uint32_t sparse_max_words) {
  if (words == 0) return PageClass::kUnknown;
  return std::popcount(words) <= static_cast<int>(sparse_max_words) ? PageClass::kSparse : PageClass::kDense;
}

}  // namespace cxlpool::tiering::manager
