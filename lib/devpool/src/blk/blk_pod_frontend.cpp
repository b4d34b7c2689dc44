// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/blk_pod_frontend.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/devpool/link_file.hpp"
#include "cxlpool/devpool/pod_region.hpp"

namespace cxlpool::devpool::blk {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kPollBatch = 64;

// The link of one leg: its slot in the pod file, held as a frontend.
struct Leg {
  std::uint32_t slot = 0;
  std::uint32_t device = 0;
  std::unique_ptr<LinkFile> link;
  std::unique_ptr<BlkFrontend> frontend;
};

class PodQueue final : public PodBlkFrontend {
 public:
  PodQueue(UniqueFd pod_fd, Mapping pod, std::uint32_t line, std::uint64_t slots_offset, std::uint64_t slot_bytes,
           std::function<Result<AttachmentLine>()> read_line, const PodBlkOptions& options)
      : pod_fd_(std::move(pod_fd)), pod_(std::move(pod)), line_(line), slots_offset_(slots_offset),
        slot_bytes_(slot_bytes), read_line_(std::move(read_line)), options_(options) {}

  Result<void> start() {
    auto line = wait_for_leg(0, Clock::now() + options_.failover_timeout);
    if (!line) return tl::unexpected(line.error());
    auto leg = open_leg(*line, Clock::now() + options_.failover_timeout);
    if (!leg) return tl::unexpected(leg.error());
    home_ = std::move(*leg);
    device_ = home_.frontend->device();
    init_buffers(home_.link->view().frontend_buffers);
    const std::uint32_t n = home_.frontend->max_in_flight();
    commands_.resize(n);
    for (std::uint32_t i = n; i > 0; --i) free_.push_back(i - 1);
    return {};
  }

  Result<std::size_t> submit(std::span<const BlkRequest> requests) override {
    if (dead_ != 0) return fail(dead_, "blk: no backend serves the attachment");
    if (!retry_.empty()) {
      if (auto ok = resend(); !ok) return tl::unexpected(ok.error());
    }
    if (free_.empty()) return fail(EAGAIN, "blk: the request queue is full");
    const std::size_t n = std::min(requests.size(), free_.size());
    std::vector<BlkRequest> sent(n);
    for (std::size_t i = 0; i < n; ++i) {
      sent[i] = requests[i];
      sent[i].user_data = free_[free_.size() - 1 - i];
      if (requests[i].opcode == Opcode::kWrite) bounce_out(requests[i]);
    }
    auto queued = frontend().submit(sent);
    if (!queued) {
      if (!retryable(queued.error().code)) return queued;
      // The leg's backend is gone: move, then queue there.
      if (auto ok = failover(); !ok) {
        give_up(ok.error().code);
        return tl::unexpected(ok.error());
      }
      return submit(requests);
    }
    for (std::size_t i = 0; i < *queued; ++i) {
      const std::uint32_t id = free_.back();
      free_.pop_back();
      commands_[id] = Command{true, requests[i]};
    }
    return *queued;
  }

  Result<std::size_t> poll(std::span<BlkResult> out, std::size_t min, std::chrono::nanoseconds timeout) override {
    min = std::min(min, out.size());
    const auto deadline = Clock::now() + std::min<std::chrono::nanoseconds>(timeout, std::chrono::hours(24));
    BlkResult got[kPollBatch];
    for (;;) {
      if (!retry_.empty()) (void)resend();  // a failure completes the retries with its error
      if (in_flight() > retry_.size() && dead_ == 0) {
        const auto now = Clock::now();
        const auto left = deadline > now ? deadline - now : std::chrono::nanoseconds(0);
        const std::size_t want = ready_.size() < min ? std::min(kPollBatch, min - ready_.size()) : 0;
        auto r = frontend().poll({got, kPollBatch}, want, left);
        if (!r && r.error().code == EPROTO) return tl::unexpected(r.error());
        for (std::size_t i = 0; r && i < *r; ++i) {
          if (auto ok = complete(got[i]); !ok) return tl::unexpected(ok.error());
        }
      }
      if (ready_.size() >= min || in_flight() == 0 || dead_ != 0) break;
      if (Clock::now() >= deadline && retry_.empty()) break;
    }
    const std::size_t n = std::min(out.size(), ready_.size());
    std::copy_n(ready_.begin(), n, out.begin());
    ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(n));
    if (n == 0 && dead_ != 0 && in_flight() == 0) return fail(dead_, "blk: no backend serves the attachment");
    return n;
  }

  std::uint32_t in_flight() const override { return static_cast<std::uint32_t>(commands_.size() - free_.size()); }
  std::uint32_t max_in_flight() const override { return static_cast<std::uint32_t>(commands_.size()); }
  int gone() const override { return dead_; }
  PodBlkStats pod_stats() const override { return stats_; }

 private:
  struct Command {
    bool busy = false;
    BlkRequest request;  // as the application gave it: its user_data, its buffer in the home area
  };

  BlkFrontend& frontend() { return current_.frontend ? *current_.frontend : *home_.frontend; }
  bool bouncing() const { return current_.frontend != nullptr; }

  // On another leg the application's buffer (home area) is copied to the
  // same offset of that leg's area before a write, and back after a read.
  void bounce_out(const BlkRequest& r) {
    if (!bouncing() || !inside(r)) return;
    // memmove: back on the home slot the two areas are one memory.
    std::memmove(current_.frontend->buffer_area().data() + r.buffer_offset, area_.data() + r.buffer_offset, r.length);
    ++stats_.bounced;
  }
  void bounce_in(const BlkRequest& r, std::uint32_t bytes) {
    if (!bouncing() || !inside(r) || bytes > r.length) return;
    std::memmove(area_.data() + r.buffer_offset, current_.frontend->buffer_area().data() + r.buffer_offset, bytes);
  }
  bool inside(const BlkRequest& r) const {
    return r.buffer_offset <= area_.size() && r.length <= area_.size() - r.buffer_offset;
  }

  Result<void> complete(const BlkResult& result) {
    if (result.user_data >= commands_.size() || !commands_[result.user_data].busy) {
      return fail(EPROTO, "blk: a completion for a command that is not outstanding");
    }
    const auto id = static_cast<std::uint32_t>(result.user_data);
    Command& c = commands_[id];
    // The leg's frontend gave up on its backend: the command never got an
    // answer, so it is run again on the leg the table names next.
    if (retryable(frontend().gone()) && result.status == -frontend().gone()) {
      retry_.push_back(id);
      return {};
    }
    if (c.request.opcode == Opcode::kRead && result.status == 0) bounce_in(c.request, result.bytes);
    ready_.push_back(BlkResult{c.request.user_data, result.status, result.bytes});
    c.busy = false;
    free_.push_back(id);
    return {};
  }

  // Moves to the next leg when this one's backend is gone and sends the
  // retries there; when no leg takes them they complete with the error and
  // the handle is dead. Retries that do not fit yet stay for the next call.
  Result<void> resend() {
    if (const int why = frontend().gone(); why != 0) {
      auto moved = retryable(why) ? failover() : fail(why, "blk: the backend broke the protocol");
      if (!moved) {
        give_up(moved.error().code);
        return moved;
      }
    }
    std::vector<BlkRequest> again;
    for (std::uint32_t id : retry_) {
      BlkRequest r = commands_[id].request;
      if (r.opcode == Opcode::kWrite) bounce_out(r);
      r.user_data = id;
      again.push_back(r);
    }
    auto queued = frontend().submit(again);
    if (!queued) {
      // A full ring, or a leg that died meanwhile: the next poll drains it
      // and comes back here.
      const int code = queued.error().code;
      if (code == EAGAIN || retryable(code)) return {};
      give_up(code);
      return tl::unexpected(queued.error());
    }
    stats_.resubmitted += *queued;
    retry_.erase(retry_.begin(), retry_.begin() + static_cast<std::ptrdiff_t>(*queued));
    return {};
  }

  static bool retryable(int error) { return error == ENOTCONN || error == ETIMEDOUT; }

  // Takes every result the dead leg's frontend still holds (it failed its
  // outstanding commands when it gave up) before that frontend goes.
  Result<void> drain_dead_leg() {
    BlkResult got[kPollBatch];
    for (;;) {
      auto r = frontend().poll({got, kPollBatch}, 0, std::chrono::nanoseconds(0));
      if (!r || *r == 0) return {};
      for (std::size_t i = 0; i < *r; ++i) {
        if (auto ok = complete(got[i]); !ok) return ok;
      }
    }
  }

  void give_up(int error) {
    dead_ = error;
    for (std::uint32_t id : retry_) {
      ready_.push_back(BlkResult{commands_[id].request.user_data, -error, 0});
      commands_[id].busy = false;
      free_.push_back(id);
    }
    retry_.clear();
  }

  Result<void> failover() {
    if (auto ok = drain_dead_leg(); !ok) return ok;
    const auto deadline = Clock::now() + options_.failover_timeout;
    const std::uint32_t failed = current_.frontend ? current_.device : home_.device;
    auto line = wait_for_leg(failed, deadline);
    if (!line) return tl::unexpected(line.error());
    if (line->active_slot() == home_.slot) home_.link->unlock_frontends();  // claimed afresh below
    auto leg = open_leg(*line, deadline);
    if (!leg) return tl::unexpected(leg.error());
    const DeviceInfo& d = leg->frontend->device();
    if (d.capacity != device_.capacity || d.block_size != device_.block_size) {
      return fail(EPROTO, "blk: the backup leg serves a different device");
    }
    current_.frontend.reset();  // before the link it points into
    current_ = std::move(*leg);
    ++stats_.failovers;
    return {};
  }

  // Waits until the table's active leg names a device other than `failed`.
  Result<AttachmentLine> wait_for_leg(std::uint32_t failed, Clock::time_point deadline) {
    for (;;) {
      auto line = read_line_();
      if (line && line->state == LineState::kInUse && line->active_device() != 0 && line->active_device() != failed) {
        return line;
      }
      if (line && line->state != LineState::kInUse) return fail(ENOTCONN, "blk: the attachment is gone");
      if (Clock::now() >= deadline) {
        return fail(failed == 0 ? ENOTCONN : ETIMEDOUT, "blk: the pod table names no other device for the attachment");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // Claims the active leg's link (its backend may still be picking the
  // attachment up from the table) and identifies the device there.
  Result<Leg> open_leg(const AttachmentLine& line, Clock::time_point deadline) {
    Leg leg;
    leg.slot = line.active_slot();
    leg.device = line.active_device();
    for (;;) {
      auto link = LinkFile::adopt(pod_fd_.get(), slots_offset_ + std::uint64_t{leg.slot} * slot_bytes_);
      if (!link) return tl::unexpected(link.error());
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto claimed = link->claim_frontend(std::max(left, std::chrono::milliseconds(1)));
      if (claimed) {
        leg.link = std::make_unique<LinkFile>(std::move(*link));
        break;
      }
      if (claimed.error().code != ENOTCONN || Clock::now() >= deadline) return tl::unexpected(claimed.error());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    BlkFrontendOptions o;
    o.command_timeout = options_.command_timeout;
    LinkFile* link = leg.link.get();
    o.backend_alive = [link] { return link->backend_alive(); };
    o.doorbell = link->view().geometry.completions.coherence == Coherence::kCoherent;
    auto frontend = make_blk_frontend(link->view(), o);
    if (!frontend) return tl::unexpected(frontend.error());
    leg.frontend = std::move(*frontend);
    return leg;
  }

  UniqueFd pod_fd_;
  Mapping pod_;
  std::uint32_t line_;
  std::uint64_t slots_offset_, slot_bytes_;
  std::function<Result<AttachmentLine>()> read_line_;
  PodBlkOptions options_;
  Leg home_;     // the first leg: its area holds the application's buffers
  Leg current_;  // another leg, after a failover (empty while on the home leg)
  std::vector<Command> commands_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> retry_;
  std::vector<BlkResult> ready_;
  PodBlkStats stats_;
  int dead_ = 0;
};

template <class Lines>
std::function<Result<AttachmentLine>()> line_reader(std::span<std::byte> pod, std::uint32_t line) {
  auto reader = PodTableReader<Lines>::open(pod);
  return [reader = *reader, line]() mutable { return reader.attachment(line); };
}

}  // namespace

Result<std::unique_ptr<PodBlkFrontend>> make_pod_blk_frontend(int pod_fd, std::uint32_t line,
                                                              const PodBlkOptions& options) {
  // A description of our own, so that our lock queries never see the caller's.
  UniqueFd fd(::open(("/proc/self/fd/" + std::to_string(pod_fd)).c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) return fail_errno("reopen the pod file");
  struct stat st{};
  if (::fstat(fd.get(), &st) < 0) return fail_errno("fstat the pod file");
  if (!S_ISREG(st.st_mode) || st.st_size <= 0) return fail(EPROTO, "blk: the pod file is not a regular file");
  auto pod = Mapping::map(static_cast<std::size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  if (!pod) return tl::unexpected(pod.error());
  const std::span<std::byte> memory{pod->data(), pod->length()};
  auto g = read_pod_header(memory);
  if (!g) return tl::unexpected(g.error());
  if (line >= g->max_attachments) return fail(EPROTO, "blk: attachment line " + std::to_string(line) + " past the table");
  auto read_line = g->coherence == Coherence::kNonCoherent ? line_reader<NonCoherentLines>(memory, line)
                                                           : line_reader<CoherentLines>(memory, line);
  const std::uint64_t slots_offset = pod_layout(*g)->slots_offset;
  auto queue = std::make_unique<PodQueue>(std::move(fd), std::move(*pod), line, slots_offset, g->slot_bytes,
                                          std::move(read_line), options);
  if (auto ok = queue->start(); !ok) return tl::unexpected(ok.error());
  return std::unique_ptr<PodBlkFrontend>(std::move(queue));
}

}  // namespace cxlpool::devpool::blk
