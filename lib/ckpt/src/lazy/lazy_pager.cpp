// SPDX-License-Identifier: Apache-2.0
// The page server's loop: one epoll set over every client's userfaultfd
// (and pidfd), one thread, one lock held while a batch of messages is
// handled so that add_client/prefill from other threads see a consistent
// client table.
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_set>

#include "cxlpool/ckpt/lazy_pager.hpp"
#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/mapping.hpp"
#include "range_map.hpp"

namespace cxlpool::ckpt {

namespace {

// epoll tags: 0 is the stop eventfd; a client's uffd is id << 1, its pidfd
// (id << 1) | 1. Ids start at 1.
constexpr uint64_t kStopTag = 0;
constexpr int kMessagesPerRead = 32;
// How often prefill retries a page whose clone is between mm changes.
constexpr int kPrefillRetries = 1000;

enum class Outcome {
  kPlaced,  // the first page is in place (ours or another copy's)
  kRetry,   // EAGAIN before the first page: the clone's mm is changing; read its events first
  kGone,    // the client's memory is gone (exited) or its descriptor failed
};

struct Placement {
  Outcome outcome = Outcome::kPlaced;
  uint64_t pages = 0;  // placed by this call
};

struct Client {
  LazyClientId id = 0;
  UniqueFd uffd, pidfd;
  lazy::RangeMap map;
  std::vector<std::pair<uint64_t, uint64_t>> deferred;  // {fault address, time read}
};

}  // namespace

class LazyPager::Impl {
 public:
  Mapping source;
  LazyPagerOptions options;
  UniqueFd epoll, stop_event;
  std::atomic<bool> stopped{false};

  mutable std::mutex mu;
  std::map<LazyClientId, std::unique_ptr<Client>> clients;
  LazyClientId next_id = 1;
  bool had_client = false;
  LazyPagerCounters counters;
  std::vector<uint64_t> order;
  std::unordered_set<uint64_t> seen;

  Result<LazyClientId> add_locked(UniqueFd uffd, lazy::RangeMap map, UniqueFd pidfd);
  void drop_locked(LazyClientId id);
  Placement place(Client& c, uint64_t page, uint64_t end, bool from_source, uint64_t source_offset, bool prefill);
  Outcome serve_fault(Client& c, uint64_t addr);
  // false: the client is gone and must be dropped.
  bool read_messages(Client& c);
  bool retry_deferred(Client& c);
  void record(uint64_t first, uint64_t pages);
};

Result<LazyClientId> LazyPager::Impl::add_locked(UniqueFd uffd, lazy::RangeMap map, UniqueFd pidfd) {
  // The pager reads without blocking; the flag lives in the open file, so
  // it also holds for a descriptor the clone opened blocking.
  int fl = ::fcntl(uffd.get(), F_GETFL);
  if (fl < 0 || ::fcntl(uffd.get(), F_SETFL, fl | O_NONBLOCK) != 0) return fail_errno("userfaultfd O_NONBLOCK");
  ::fcntl(uffd.get(), F_SETFD, FD_CLOEXEC);
  auto c = std::make_unique<Client>();
  c->id = next_id++;
  c->uffd = std::move(uffd);
  c->pidfd = std::move(pidfd);
  c->map = std::move(map);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = c->id << 1;
  if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, c->uffd.get(), &ev) != 0) return fail_errno("epoll add userfaultfd");
  if (c->pidfd) {
    ev.data.u64 = (c->id << 1) | 1;
    if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, c->pidfd.get(), &ev) != 0) return fail_errno("epoll add pidfd");
  }
  LazyClientId id = c->id;
  clients.emplace(id, std::move(c));
  had_client = true;
  ++counters.clients_added;
  return id;
}

void LazyPager::Impl::drop_locked(LazyClientId id) {
  // Closing the descriptors takes them out of the epoll set.
  if (clients.erase(id) != 0) ++counters.clients_dropped;
}

void LazyPager::Impl::record(uint64_t first, uint64_t pages) {
  if (!options.record_order) return;
  for (uint64_t i = 0; i < pages; ++i) {
    uint64_t p = first + i * kPageSize;
    if (seen.insert(p).second) order.push_back(p);
  }
}

// Places [page, end): the first page must end up present, the rest is a
// best-effort window. A partial UFFDIO_COPY reports EAGAIN with the bytes
// it did; a page that is already there reports EEXIST and is stepped over.
Placement LazyPager::Impl::place(Client& c, uint64_t page, uint64_t end, bool from_source, uint64_t source_offset,
                                 bool prefill) {
  Placement result;
  uint64_t at = page;
  while (at < end) {
    uint64_t len = end - at;
    int64_t done = 0;
    int err = 0;
    if (from_source) {
      uffdio_copy cp{};
      cp.dst = at;
      cp.src = reinterpret_cast<uint64_t>(source.data()) + source_offset + (at - page);
      cp.len = len;
      if (::ioctl(c.uffd.get(), UFFDIO_COPY, &cp) == 0) done = static_cast<int64_t>(len);
      else err = errno, done = cp.copy > 0 ? cp.copy : 0;
    } else {
      uffdio_zeropage zp{};
      zp.range.start = at;
      zp.range.len = len;
      if (::ioctl(c.uffd.get(), UFFDIO_ZEROPAGE, &zp) == 0) done = static_cast<int64_t>(len);
      else err = errno, done = zp.zeropage > 0 ? zp.zeropage : 0;
    }
    uint64_t pages = static_cast<uint64_t>(done) / kPageSize;
    if (pages > 0) {
      result.pages += pages;
      if (from_source) {
        counters.pages_copied += pages;
        counters.bytes_copied += pages * kPageSize;
        if (prefill) counters.prefilled_pages += pages;
        else record(at, pages);
      } else {
        counters.zero_pages += pages;
      }
      at += pages * kPageSize;
    }
    if (err == 0) continue;
    if (err == EAGAIN) {
      if (pages > 0) continue;
      if (at == page) result.outcome = Outcome::kRetry;
      return result;
    }
    if (err == EEXIST) {
      // Another copy (a window, a prefill, a racing fault's answer) placed
      // it; that copy woke its waiters, but a fault read before it may
      // still sleep on this page.
      ++counters.already_present;
      if (at == page && !prefill) {
        uffdio_range r{page, kPageSize};
        ::ioctl(c.uffd.get(), UFFDIO_WAKE, &r);
      }
      at += kPageSize;
      continue;
    }
    if (err == ENOENT && end - at > kPageSize) {
      // The window ran past the end of the registered VMA (zeros after the
      // last range reach that far): finish with the one page.
      end = at + kPageSize;
      continue;
    }
    if (err == ENOENT) return result;  // the VMA went away (unmapped or unregistered): no one waits
    if (err != ESRCH) ++counters.errors;
    result.outcome = Outcome::kGone;
    return result;
  }
  return result;
}

Outcome LazyPager::Impl::serve_fault(Client& c, uint64_t addr) {
  uint64_t page = addr & ~(kPageSize - 1);
  lazy::RangeMap::Hit hit = c.map.lookup(page);
  uint64_t window = uint64_t{options.window_pages} * kPageSize;
  uint64_t end = page + window < page ? hit.end : std::min(hit.end, page + window);
  return place(c, page, end, hit.from_source, hit.source_offset, false).outcome;
}

bool LazyPager::Impl::read_messages(Client& c) {
  uffd_msg msgs[kMessagesPerRead];
  for (;;) {
    ssize_t n = ::read(c.uffd.get(), msgs, sizeof msgs);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return true;
      ++counters.errors;
      return false;
    }
    if (n == 0) return false;
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof(uffd_msg); ++i) {
      const uffd_msg& m = msgs[i];
      switch (m.event) {
        case UFFD_EVENT_PAGEFAULT: {
          uint64_t t0 = monotonic_ns();
          Outcome o = serve_fault(c, m.arg.pagefault.address);
          if (o == Outcome::kGone) return false;
          if (o == Outcome::kRetry) {
            ++counters.retries;
            c.deferred.emplace_back(m.arg.pagefault.address, t0);
          } else {
            ++counters.faults;
            counters.fault_latency.add(monotonic_ns() - t0);
          }
          break;
        }
        case UFFD_EVENT_FORK: {
          // The child's missing pages are the parent's: same ranges.
          ++counters.fork_events;
          UniqueFd child(static_cast<int>(m.arg.fork.ufd));
          if (!add_locked(std::move(child), c.map, UniqueFd{})) ++counters.errors;
          break;
        }
        case UFFD_EVENT_REMAP:
          ++counters.remap_events;
          c.map.move(m.arg.remap.from, m.arg.remap.to, m.arg.remap.len);
          break;
        case UFFD_EVENT_REMOVE:
          // MADV_DONTNEED/MADV_REMOVE: anonymous memory reads zeros there from now on.
          ++counters.remove_events;
          c.map.erase(m.arg.remove.start, m.arg.remove.end);
          break;
        case UFFD_EVENT_UNMAP:
          ++counters.unmap_events;
          c.map.erase(m.arg.remove.start, m.arg.remove.end);
          break;
        default:
          break;
      }
    }
  }
}

bool LazyPager::Impl::retry_deferred(Client& c) {
  auto pending = std::move(c.deferred);
  c.deferred.clear();
  for (const auto& [addr, t0] : pending) {
    Outcome o = serve_fault(c, addr);
    if (o == Outcome::kGone) return false;
    if (o == Outcome::kRetry) {
      ++counters.retries;
      c.deferred.emplace_back(addr, t0);
    } else {
      ++counters.faults;
      counters.fault_latency.add(monotonic_ns() - t0);
    }
  }
  return true;
}

LazyPager::LazyPager(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LazyPager::~LazyPager() = default;

Result<std::unique_ptr<LazyPager>> LazyPager::create(int source_fd, LazyPagerOptions options) {
  if (options.window_pages == 0) return fail(EINVAL, "lazy pager: window_pages must be at least 1");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  struct stat st {};
  if (::fstat(source_fd, &st) != 0) return fail_errno("lazy pager: fstat image");
  if (st.st_size > 0) {
    auto m = Mapping::map(static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, source_fd);
    if (!m) return tl::unexpected(m.error());
    impl->source = std::move(*m);
  }
  impl->epoll.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!impl->epoll) return fail_errno("lazy pager: epoll_create1");
  impl->stop_event.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl->stop_event) return fail_errno("lazy pager: eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kStopTag;
  if (::epoll_ctl(impl->epoll.get(), EPOLL_CTL_ADD, impl->stop_event.get(), &ev) != 0)
    return fail_errno("lazy pager: epoll add eventfd");
  return std::unique_ptr<LazyPager>(new LazyPager(std::move(impl)));
}

Result<LazyClientId> LazyPager::add_client(UniqueFd uffd, std::vector<LazyRange> ranges, UniqueFd pidfd) {
  if (!uffd) return fail(EBADF, "lazy pager: no userfaultfd");
  if (auto ok = lazy::check_ranges(ranges, impl_->source.length()); !ok)
    return fail(ok.error().code, "lazy pager: " + ok.error().message);
  lazy::RangeMap map;
  for (const LazyRange& r : ranges) map.insert(r);
  std::lock_guard lock(impl_->mu);
  return impl_->add_locked(std::move(uffd), std::move(map), std::move(pidfd));
}

Result<uint64_t> LazyPager::prefill(LazyClientId id, std::span<const uint64_t> pages) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clients.find(id);
  if (it == impl_->clients.end()) return fail(ENOENT, "lazy pager: no client " + std::to_string(id));
  Client& c = *it->second;
  uint64_t placed = 0;
  for (const lazy::ImageRun& run : lazy::image_runs(c.map, pages)) {
    for (int tries = 0;; ++tries) {
      Placement p = impl_->place(c, run.addr, run.end, true, run.source_offset, true);
      placed += p.pages;
      if (p.outcome == Outcome::kGone) return fail(ESRCH, "lazy pager: client " + std::to_string(id) + " is gone");
      if (p.outcome == Outcome::kPlaced) break;
      if (tries == kPrefillRetries) return fail(EAGAIN, "lazy pager: client's memory map keeps changing");
      ::sched_yield();
    }
  }
  return placed;
}

Result<bool> LazyPager::run_once(int timeout_ms) {
  Impl& s = *impl_;
  if (s.stopped.load()) return false;
  bool deferred = false;
  {
    std::lock_guard lock(s.mu);
    for (const auto& [id, c] : s.clients) deferred = deferred || !c->deferred.empty();
  }
  // Faults that met EAGAIN wait for the event that changes the mm to be
  // read; poll again soon rather than sleep.
  int wait_ms = deferred && (timeout_ms < 0 || timeout_ms > 1) ? 1 : timeout_ms;
  epoll_event evs[32];
  int n = ::epoll_wait(s.epoll.get(), evs, 32, wait_ms);
  if (n < 0) {
    if (errno == EINTR) return !s.stopped.load();
    return fail_errno("lazy pager: epoll_wait");
  }
  std::lock_guard lock(s.mu);
  for (int i = 0; i < n; ++i) {
    uint64_t tag = evs[i].data.u64;
    if (tag == kStopTag) {
      uint64_t v;
      [[maybe_unused]] ssize_t r = ::read(s.stop_event.get(), &v, sizeof v);
      continue;
    }
    auto it = s.clients.find(tag >> 1);
    if (it == s.clients.end()) continue;  // dropped earlier in this batch
    Client& c = *it->second;
    bool alive = (tag & 1) == 0 && ((evs[i].events & EPOLLIN) || !(evs[i].events & (EPOLLERR | EPOLLHUP)));
    // A readable pidfd: the clone exited, nothing of it can fault any more.
    if (alive) alive = s.read_messages(c);
    if (!alive) s.drop_locked(c.id);
  }
  std::vector<LazyClientId> gone;
  for (auto& [id, c] : s.clients)
    if (!c->deferred.empty() && !s.retry_deferred(*c)) gone.push_back(id);
  for (LazyClientId id : gone) s.drop_locked(id);
  if (s.options.stop_when_no_clients && s.had_client && s.clients.empty()) s.stopped = true;
  return !s.stopped.load();
}

Result<void> LazyPager::run() {
  for (;;) {
    auto r = run_once(-1);
    if (!r) return tl::unexpected(r.error());
    if (!*r) return {};
  }
}

void LazyPager::stop() {
  impl_->stopped = true;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(impl_->stop_event.get(), &one, sizeof one);
}

size_t LazyPager::client_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->clients.size();
}

LazyPagerCounters LazyPager::counters() const {
  std::lock_guard lock(impl_->mu);
  return impl_->counters;
}

std::vector<uint64_t> LazyPager::fault_order() const {
  std::lock_guard lock(impl_->mu);
  return impl_->order;
}

std::span<const std::byte> LazyPager::source() const { return {impl_->source.data(), impl_->source.length()}; }

}  // namespace cxlpool::ckpt
