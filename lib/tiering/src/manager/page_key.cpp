// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/manager/page_id.hpp"

namespace cxlpool::tiering {

std::size_t PageKeyHash::operator()(const PageKey& k) const noexcept {
  return static_cast<std::size_t>(manager::page_hash(k));
}

}  // namespace cxlpool::tiering
