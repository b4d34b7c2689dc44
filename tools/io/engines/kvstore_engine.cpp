// SPDX-License-Identifier: Apache-2.0
#include "kvstore_engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"

namespace cxlpool::io {
namespace {

constexpr std::uint64_t kReleaseTag = 1ull << 63;  // user_data of a release nobody waits for
constexpr std::uint32_t kDefaultChunkTokens = 256;

std::string option(const JobSpec& job, const char* key, std::string fallback) {
  auto it = job.engine_options.find(key);
  return it == job.engine_options.end() ? fallback : it->second;
}

Error kv_error(const std::string& what, int rc) {
  std::string detail = cxlpool_last_error();
  return Error{-rc, "kvstore: " + what + ": " + cxlpool_strerror(rc) + (detail.empty() ? "" : " (" + detail + ")")};
}

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

class KvStoreEngine final : public Engine {
 public:
  KvStoreEngine(cxlpool_client* client, cxlpool_kv* kv, cxlpool_kv_namespace ns, std::uint32_t depth,
                std::uint64_t size)
      : client_(client), kv_(kv), ns_(ns), slots_(depth), tokens_(ns.chunk_tokens) {
    geometry_.size = size;
    geometry_.logical_block_size = 1;
    geometry_.alignment_source = "kvstore";
    free_.reserve(depth);
    for (std::uint32_t i = depth; i > 0; --i) free_.push_back(i - 1);
    ready_.reserve(depth);
    requests_.reserve(depth);
    backlog_.reserve(2 * static_cast<std::size_t>(depth));
    completions_.resize(2 * static_cast<std::size_t>(depth));
  }

  ~KvStoreEngine() override {
    cxlpool_kv_close(kv_);  // releases every lease still held
    cxlpool_disconnect(client_);
  }

  const char* name() const override { return "kvstore"; }
  const hal::BlockGeometry& geometry() const override { return geometry_; }

  Result<std::span<std::byte*>> buffers(std::uint32_t count, std::size_t bytes) override {
    const std::size_t stride = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
    auto* raw = static_cast<std::byte*>(std::aligned_alloc(4096, stride * count));
    if (!raw) return fail(ENOMEM, "kvstore: " + std::to_string(count) + " buffers of " + std::to_string(bytes) + " bytes");
    storage_.reset(raw);
    pointers_.resize(count);
    for (std::uint32_t i = 0; i < count; ++i) pointers_[i] = raw + i * stride;
    return std::span<std::byte*>(pointers_);
  }

  Result<void> submit(std::span<const hal::IoRequest> requests) override {
    if (requests.size() > free_.size()) return fail(EAGAIN, "kvstore: more requests than iodepth");
    requests_.clear();
    for (const hal::IoRequest& r : requests) {
      if (r.op != hal::IoOp::kRead && r.op != hal::IoOp::kWrite) {
        // The store orders its own durability; a sync has nothing to wait for.
        ready_.push_back(hal::IoCompletion{r.user_data, 0, r.op, 0});
        continue;
      }
      const std::uint32_t index = free_.back();
      free_.pop_back();
      Slot& s = slots_[index];
      s.request = r;
      s.stage = r.op == hal::IoOp::kRead ? Stage::kGet : Stage::kPutBegin;
      if (auto ok = derive_key(r, s.key); !ok) {
        finish(index, -ok.error().code);
        continue;
      }
      cxlpool_kv_request q{};
      q.user_data = index;
      q.op = r.op == hal::IoOp::kRead ? CXLPOOL_KV_GET : CXLPOOL_KV_PUT_BEGIN;
      q.namespace_id = ns_.id;
      q.keys = &s.key;
      q.n_keys = 1;
      q.param0 = r.op == hal::IoOp::kWrite ? r.length : 0;
      requests_.push_back(q);
    }
    return send(requests_);
  }

  Result<std::size_t> reap(std::span<hal::IoCompletion> out, std::size_t min, std::chrono::nanoseconds timeout) override {
    min = std::min(min, out.size());
    // Clamped so "wait forever" (nanoseconds::max) cannot overflow the clock.
    const auto deadline = std::chrono::steady_clock::now() + std::min<std::chrono::nanoseconds>(timeout, std::chrono::hours(24));
    bool first = true;
    while (ready_.size() < min || first) {
      if (auto ok = send_backlog(); !ok) return tl::unexpected(ok.error());
      if (busy() == 0) break;
      int wait_ms = 0;
      if (ready_.size() < min) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 && !first) break;
        wait_ms = static_cast<int>(std::clamp<std::int64_t>(left.count() + 1, 0, 1000));
      }
      first = false;
      int n = cxlpool_kv_reap(kv_, completions_.data(), completions_.size(), wait_ms);
      if (n < 0) return tl::unexpected(kv_error("reap", n));
      for (int i = 0; i < n; ++i) handle(completions_[static_cast<std::size_t>(i)]);
      if (n == 0 && ready_.size() < min && std::chrono::steady_clock::now() >= deadline) break;
    }
    const std::size_t count = std::min(out.size(), ready_.size());
    std::copy_n(ready_.begin(), count, out.begin());
    ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(count));
    return count;
  }

  std::uint32_t in_flight() const override { return busy(); }

 private:
  enum class Stage : std::uint8_t { kFree, kGet, kPutBegin, kCommit };
  struct Slot {
    Stage stage = Stage::kFree;
    hal::IoRequest request;
    cxlpool_kv_key key{};
  };

  std::uint32_t busy() const { return static_cast<std::uint32_t>(slots_.size() - free_.size()); }

  // Chunk i of the target is a one-chunk sequence of tokens derived from i,
  // so the same offset and size always name the same chunk.
  Result<void> derive_key(const hal::IoRequest& r, cxlpool_kv_key& key) {
    const std::uint64_t index = r.offset / std::max<std::uint32_t>(r.length, 1);
    for (std::size_t t = 0; t < tokens_.size(); ++t) tokens_[t] = static_cast<std::uint32_t>(t);
    tokens_[0] = static_cast<std::uint32_t>(index);
    if (tokens_.size() > 1) tokens_[1] = static_cast<std::uint32_t>(index >> 32);
    int n = cxlpool_kv_compute_keys(&ns_, tokens_.data(), tokens_.size(), nullptr, &key, 1);
    if (n != 1) return fail(n < 0 ? -n : EINVAL, "kvstore: key derivation");
    return {};
  }

  void finish(std::uint32_t index, std::int64_t result) {
    Slot& s = slots_[index];
    ready_.push_back(hal::IoCompletion{s.request.user_data, result, s.request.op, s.request.length});
    s.stage = Stage::kFree;
    free_.push_back(index);
  }

  void handle(const cxlpool_kv_completion& c) {
    if (c.user_data & kReleaseTag) return;  // a failed release only shortens nothing: the lease ends at close
    const auto index = static_cast<std::uint32_t>(c.user_data);
    Slot& s = slots_[index];
    if (c.status < 0) {
      finish(index, c.status);
      return;
    }
    switch (s.stage) {
      case Stage::kGet: {
        const std::uint64_t lease = c.result0;
        if (lease == 0 || c.n_locations == 0 || c.locations[0].data == nullptr) {
          finish(index, 0);  // not stored: a short (empty) read
          if (lease != 0) queue_release(lease);
          return;
        }
        const std::uint32_t n = std::min(s.request.length, c.locations[0].length);
        std::memcpy(s.request.buffer, c.locations[0].data, n);
        queue_release(lease);
        finish(index, n);
        return;
      }
      case Stage::kPutBegin: {
        if (c.n_locations == 0) {
          finish(index, -EIO);
          return;
        }
        const cxlpool_kv_location& slot = c.locations[0];
        if (!(slot.flags & CXLPOOL_KV_LOC_CACHED) && slot.data != nullptr) {
          std::memcpy(slot.data, s.request.buffer, std::min(s.request.length, slot.length));
        }
        // Committed even when cached, so the reservation frees its window slot.
        s.stage = Stage::kCommit;
        cxlpool_kv_request q{};
        q.user_data = index;
        q.op = CXLPOOL_KV_PUT_COMMIT;
        q.namespace_id = ns_.id;
        q.keys = &s.key;
        q.n_keys = 1;
        q.param0 = c.result0;
        backlog_.push_back(q);
        return;
      }
      case Stage::kCommit:
        finish(index, s.request.length);
        return;
      case Stage::kFree:
        return;
    }
  }

  void queue_release(std::uint64_t lease) {
    cxlpool_kv_request q{};
    q.user_data = kReleaseTag;
    q.op = CXLPOOL_KV_RELEASE;
    q.param0 = lease;
    backlog_.push_back(q);
  }

  // Submits `reqs`; what the rings cannot take now waits in the backlog.
  Result<void> send(const std::vector<cxlpool_kv_request>& reqs) {
    if (reqs.empty()) return {};
    int n = cxlpool_kv_submit(kv_, reqs.data(), reqs.size());
    if (n == -EAGAIN) n = 0;
    if (n < 0) return tl::unexpected(kv_error("submit", n));
    backlog_.insert(backlog_.end(), reqs.begin() + n, reqs.end());
    return {};
  }

  Result<void> send_backlog() {
    if (backlog_.empty()) return {};
    int n = cxlpool_kv_submit(kv_, backlog_.data(), backlog_.size());
    if (n == -EAGAIN) return {};
    if (n < 0) return tl::unexpected(kv_error("submit", n));
    backlog_.erase(backlog_.begin(), backlog_.begin() + n);
    return {};
  }

  cxlpool_client* client_;
  cxlpool_kv* kv_;
  cxlpool_kv_namespace ns_;
  hal::BlockGeometry geometry_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> tokens_;
  std::vector<hal::IoCompletion> ready_;
  std::vector<cxlpool_kv_request> requests_;
  std::vector<cxlpool_kv_request> backlog_;
  std::vector<cxlpool_kv_completion> completions_;
  std::unique_ptr<std::byte, FreeDeleter> storage_;
  std::vector<std::byte*> pointers_;
};

}  // namespace

Result<std::unique_ptr<Engine>> open_kvstore_engine(const JobSpec& job, const EngineTarget& target) {
  const std::string socket = option(job, "kv_socket", "");
  const std::string model = option(job, "kv_namespace", "cxlpool-io");
  const auto chunk_tokens = static_cast<std::uint32_t>(
      std::strtoul(option(job, "kv_chunk_tokens", std::to_string(kDefaultChunkTokens)).c_str(), nullptr, 10));
  cxlpool_client* client = nullptr;
  int rc = cxlpool_connect(socket.empty() ? nullptr : socket.c_str(), "cxlpool-io", &client);
  if (rc < 0) return tl::unexpected(kv_error("connect to cxlpoold" + (socket.empty() ? "" : " at " + socket), rc));
  cxlpool_kv* kv = nullptr;
  rc = cxlpool_kv_open(client, nullptr, &kv);
  if (rc < 0) {
    cxlpool_disconnect(client);
    return tl::unexpected(kv_error("open the KV data path", rc));
  }
  cxlpool_kv_namespace_spec spec{};
  spec.model_id = model.c_str();
  spec.layout = "cxlpool-io";
  spec.dtype = "bytes";
  spec.tp_rank = 0;
  spec.tp_size = 1;
  spec.chunk_tokens = chunk_tokens;
  cxlpool_kv_namespace ns{};
  rc = cxlpool_kv_namespace_open(kv, &spec, &ns);
  if (rc < 0) {
    cxlpool_kv_close(kv);
    cxlpool_disconnect(client);
    return tl::unexpected(kv_error("namespace " + model, rc));
  }
  const std::uint32_t depth = std::max<std::uint32_t>(1, job.iodepth);
  return std::unique_ptr<Engine>(new KvStoreEngine(client, kv, ns, depth, target.size));
}

}  // namespace cxlpool::io
