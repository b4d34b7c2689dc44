// SPDX-License-Identifier: Apache-2.0
#include "devpool_engine.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cxlpool/blk.h"

namespace cxlpool::io {
namespace {

Error blk_error(const std::string& what, int rc) {
  const std::string detail = cxlpool_last_error();
  return Error{-rc, "devpool: " + what + ": " + cxlpool_strerror(rc) + (detail.empty() ? "" : " (" + detail + ")")};
}

// The open handles of this process, by link path: a link takes one
// attachment per backend start, so later jobs reuse the first one's handle.
// close_devpool_links() closes them when the run ends.
struct SharedLink {
  cxlpool_blk* blk = nullptr;
  bool busy = false;
};

std::mutex& links_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, SharedLink>& links() {
  static std::map<std::string, SharedLink> m;
  return m;
}

class DevpoolEngine final : public Engine {
 public:
  DevpoolEngine(std::string link, cxlpool_blk* blk, const cxlpool_blk_info& info) : link_(std::move(link)), blk_(blk) {
    geometry_.size = info.capacity;
    geometry_.logical_block_size = info.block_size;
    geometry_.offset_alignment = info.block_size;
    geometry_.mem_alignment = info.mem_alignment;
    geometry_.alignment_source = "devpool identify";
    slots_.resize(info.max_in_flight);
    free_.reserve(info.max_in_flight);
    for (std::uint32_t i = info.max_in_flight; i > 0; --i) free_.push_back(i - 1);
    done_.resize(info.max_in_flight);
  }

  ~DevpoolEngine() override {
    // Waits out what is still in flight so the next job starts on an idle link.
    while (outstanding() > 0) {
      if (cxlpool_blk_poll(blk_, done_.data(), done_.size(), 1, 1000) <= 0) break;
    }
    for (void* p : pointers_) cxlpool_blk_buffer_free(blk_, p);
    std::lock_guard lock(links_mutex());
    links()[link_].busy = false;
  }

  const char* name() const override { return "devpool"; }
  const hal::BlockGeometry& geometry() const override { return geometry_; }

  Result<std::span<std::byte*>> buffers(std::uint32_t count, std::size_t bytes) override {
    for (std::uint32_t i = 0; i < count; ++i) {
      void* p = nullptr;
      const int rc = cxlpool_blk_buffer_alloc(blk_, std::max<std::size_t>(bytes, 1), &p);
      if (rc < 0) return tl::unexpected(blk_error(std::to_string(count) + " buffers of " + std::to_string(bytes) + " bytes", rc));
      pointers_.push_back(static_cast<std::byte*>(p));
    }
    return std::span<std::byte*>(pointers_);
  }

  Result<void> submit(std::span<const hal::IoRequest> requests) override {
    if (requests.size() > free_.size()) return fail(EAGAIN, "devpool: more requests than the link holds");
    batch_.clear();
    for (const hal::IoRequest& r : requests) {
      const std::uint32_t slot = free_.back();
      free_.pop_back();
      slots_[slot] = hal::IoCompletion{r.user_data, 0, r.op, r.length};
      cxlpool_blk_request q{};
      q.user_data = slot;
      if (r.op == hal::IoOp::kRead || r.op == hal::IoOp::kWrite) {
        q.op = r.op == hal::IoOp::kRead ? CXLPOOL_BLK_READ : CXLPOOL_BLK_WRITE;
        q.offset = r.offset;
        q.buf = r.buffer;
        q.length = r.length;
      } else {
        q.op = CXLPOOL_BLK_FLUSH;
      }
      batch_.push_back(q);
    }
    // The queue may take part of a batch now and the rest once commands move.
    std::size_t sent = 0;
    while (sent < batch_.size()) {
      const int n = cxlpool_blk_submit(blk_, batch_.data() + sent, batch_.size() - sent);
      if (n == -EAGAIN) {
        if (auto ok = collect(1, std::chrono::milliseconds(100)); !ok) return ok;
        continue;
      }
      if (n < 0) {
        for (std::size_t i = sent; i < batch_.size(); ++i) free_.push_back(static_cast<std::uint32_t>(batch_[i].user_data));
        return tl::unexpected(blk_error("submit", n));
      }
      sent += static_cast<std::size_t>(n);
    }
    return {};
  }

  Result<std::size_t> reap(std::span<hal::IoCompletion> out, std::size_t min, std::chrono::nanoseconds timeout) override {
    min = std::min(min, out.size());
    if (ready_.size() < min) {
      if (auto ok = collect(min - ready_.size(), timeout); !ok) return tl::unexpected(ok.error());
    } else if (ready_.empty()) {
      if (auto ok = collect(0, std::chrono::nanoseconds(0)); !ok) return tl::unexpected(ok.error());
    }
    const std::size_t n = std::min(out.size(), ready_.size());
    std::copy_n(ready_.begin(), n, out.begin());
    ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
  }

  // Completions collected but not yet reaped count as in flight, as a
  // BlockDevice counts them until polled.
  std::uint32_t in_flight() const override { return outstanding() + static_cast<std::uint32_t>(ready_.size()); }

 private:
  std::uint32_t outstanding() const { return static_cast<std::uint32_t>(slots_.size() - free_.size()); }

  Result<void> collect(std::size_t min, std::chrono::nanoseconds timeout) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
    const int timeout_ms = timeout == std::chrono::nanoseconds::max() ? -1 : static_cast<int>(std::min<std::int64_t>(ms, 1 << 30));
    const std::size_t want = std::min(min, done_.size());
    const int n = cxlpool_blk_poll(blk_, done_.data(), done_.size(), want, timeout_ms);
    if (n < 0) return tl::unexpected(blk_error("poll", n));
    for (int i = 0; i < n; ++i) {
      const cxlpool_blk_completion& c = done_[static_cast<std::size_t>(i)];
      const auto slot = static_cast<std::uint32_t>(c.user_data);
      hal::IoCompletion done = slots_[slot];
      done.result = c.status < 0 ? c.status : static_cast<std::int64_t>(c.bytes);
      ready_.push_back(done);
      free_.push_back(slot);
    }
    return {};
  }

  std::string link_;
  cxlpool_blk* blk_;
  hal::BlockGeometry geometry_;
  std::vector<hal::IoCompletion> slots_;
  std::vector<std::uint32_t> free_;
  std::vector<hal::IoCompletion> ready_;
  std::vector<cxlpool_blk_request> batch_;
  std::vector<cxlpool_blk_completion> done_;
  std::vector<std::byte*> pointers_;
};

std::string option(const JobSpec& job, const char* key, std::string fallback) {
  auto it = job.engine_options.find(key);
  return it == job.engine_options.end() ? fallback : it->second;
}

// Through the pod allocator when the job names a daemon socket or a host:
// the handle is an attachment, keyed by what it was asked for.
bool through_pod(const JobSpec& job) {
  return job.engine_options.count("devpool_socket") != 0 || job.engine_options.count("devpool_host") != 0;
}

std::string pod_host(const JobSpec& job) {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') std::strcpy(name, "localhost");
  return option(job, "devpool_host", name);
}

}  // namespace

Result<std::unique_ptr<Engine>> open_devpool_engine(const JobSpec& job, const EngineTarget& target) {
  const bool pod = through_pod(job);
  const std::string socket = option(job, "devpool_socket", ""), host = pod_host(job), device = option(job, "devpool_device", "");
  const std::string link = pod ? "pod " + socket + " " + host + " " + device : option(job, "devpool_link", target.path);
  cxlpool_blk_options options{};
  options.timeout_ms = static_cast<std::uint32_t>(std::strtoul(option(job, "devpool_timeout_ms", "0").c_str(), nullptr, 10));
  std::lock_guard lock(links_mutex());
  SharedLink& shared = links()[link];
  if (shared.busy) return fail(EBUSY, "devpool: " + link + " is in use by another job of this run");
  if (shared.blk == nullptr) {
    const int rc = pod ? cxlpool_blk_attach(socket.empty() ? nullptr : socket.c_str(), host.c_str(),
                                            device.empty() ? nullptr : device.c_str(), &options, &shared.blk)
                       : cxlpool_blk_open(link.c_str(), &options, &shared.blk);
    if (rc < 0) {
      links().erase(link);
      return tl::unexpected(blk_error((pod ? "attach through " : "open ") + link, rc));
    }
  }
  cxlpool_blk_info info{};
  if (const int rc = cxlpool_blk_get_info(shared.blk, &info); rc < 0) return tl::unexpected(blk_error("info", rc));
  if (target.writes && info.read_only) return fail(EROFS, "devpool: " + link + " serves a read-only device");
  if (info.max_in_flight < std::max<std::uint32_t>(1, job.iodepth)) {
    return fail(EINVAL, "devpool: iodepth " + std::to_string(job.iodepth) + " exceeds the link's " +
                            std::to_string(info.max_in_flight) + " slots");
  }
  shared.busy = true;
  return std::unique_ptr<Engine>(new DevpoolEngine(link, shared.blk, info));
}

void close_devpool_links() {
  std::lock_guard lock(links_mutex());
  for (auto& [path, shared] : links()) {
    if (shared.blk != nullptr) cxlpool_blk_close(shared.blk);
  }
  links().clear();
}

}  // namespace cxlpool::io
