// SPDX-License-Identifier: Apache-2.0
// Owning handles for the libcxlpool C ABI objects the runtime path uses.
#pragma once

#include <memory>
#include <string>

#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"
#include "cxlpool/kv_arena.h"
#include "cxlpool/weights.h"
#include "cxlpool/common/result.hpp"

namespace cxlpool::infer {

struct ClientCloser { void operator()(cxlpool_client* c) const { cxlpool_disconnect(c); } };
struct KvCloser { void operator()(cxlpool_kv* k) const { cxlpool_kv_close(k); } };
struct ArenaCloser { void operator()(cxlpool_kv_arena* a) const { cxlpool_kv_arena_destroy(a); } };
struct WeightsCloser { void operator()(cxlpool_weights* w) const { cxlpool_weights_close(w); } };
struct StreamerCloser { void operator()(cxlpool_weight_streamer* s) const { cxlpool_weight_streamer_destroy(s); } };

using ClientHandle = std::unique_ptr<cxlpool_client, ClientCloser>;
using KvHandle = std::unique_ptr<cxlpool_kv, KvCloser>;
using ArenaHandle = std::unique_ptr<cxlpool_kv_arena, ArenaCloser>;
using WeightsHandle = std::unique_ptr<cxlpool_weights, WeightsCloser>;
using StreamerHandle = std::unique_ptr<cxlpool_weight_streamer, StreamerCloser>;

// A failed C call as an Error: "what: strerror (daemon's message)".
inline tl::unexpected<Error> api_error(const std::string& what, int rc) {
  std::string message = what + ": " + cxlpool_strerror(rc);
  const char* detail = cxlpool_last_error();
  if (detail != nullptr && detail[0] != '\0') message += std::string(" (") + detail + ")";
  return fail(rc < 0 ? -rc : EIO, message);
}

}  // namespace cxlpool::infer
