// SPDX-License-Identifier: Apache-2.0
// The KV integration tests' client side through the C ABI (kv.h): one
// connection with its KV data path, and the keys of a token sequence.
// Failures are results the test checks, not test failures: some tests expect
// them (a second user's connection, a store that is disabled).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"
#include "support/kv_namespace_spec.hpp"

namespace cxlpool::integration {

using test::kv_namespace_spec;

struct KvConnection {
  cxlpool_client* client = nullptr;
  cxlpool_kv* kv = nullptr;
  int error = 0;  // the connect's or the KV open's result, whichever failed

  KvConnection(const std::string& socket, const std::string& name);
  ~KvConnection();
  KvConnection(const KvConnection&) = delete;
  KvConnection& operator=(const KvConnection&) = delete;
  bool ok() const { return error == 0 && kv != nullptr; }
};

// Keys of the full chunks of `tokens` in `ns`, chained from `parent`; none
// when `ns` was never opened or the computation fails.
std::vector<cxlpool_kv_key> chunk_keys(const cxlpool_kv_namespace& ns, const std::vector<uint32_t>& tokens,
                                       const cxlpool_kv_key* parent = nullptr);

}  // namespace cxlpool::integration
