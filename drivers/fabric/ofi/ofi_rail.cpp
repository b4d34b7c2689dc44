// SPDX-License-Identifier: Apache-2.0
#include "ofi_rail.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/prctl.h>
#include <time.h>

#include <cstdlib>
#include <cstring>

#include "cxlpool/hal/driver/transfer_wire.hpp"

namespace cxlpool::drivers::ofi {
namespace {

constexpr int kReceives = 32;  // control messages in flight towards one rail
constexpr int kCqBatch = 32;
// Post retries while the provider's queues are full, before giving up.
constexpr auto kPostPatience = std::chrono::seconds(5);

thread_local int dispatch_depth = 0;

// Keeps libfabric objects that must not be closed reachable until the
// process ends (a leak checker sees them held, not lost).
void park(std::vector<fid*> fids) {
  static std::mutex mu;
  static auto* parked = new std::vector<fid*>();
  std::lock_guard guard(mu);
  parked->insert(parked->end(), fids.begin(), fids.end());
}

Error fi_error(const std::string& what, ssize_t rc) {
  const int code = static_cast<int>(rc < 0 ? -rc : rc);
  // libfabric's own codes (FI_ETRUNC and up) are no errno values.
  return Error{code < 256 ? code : EIO, what + ": " + fi_strerror(code)};
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

fi_info* make_hints(const std::string& provider, bool ordered, bool provider_keys) {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) return nullptr;
  hints->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  // Keys are ours (a region's key is the same on every rail and after a
  // reset); addresses may be virtual (shm) or offsets (tcp).
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_LOCAL;
  // Providers that only take keys they chose (verbs) are asked second.
  if (provider_keys) hints->domain_attr->mr_mode |= FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  // A verify message must not pass the writes before it on the same rail.
  if (ordered) hints->tx_attr->msg_order = FI_ORDER_SAW;
  hints->fabric_attr->prov_name = ::strdup(provider.c_str());
  return hints;
}

}  // namespace

Rail::Rail(std::string provider, std::uint32_t index, MessageHandler handler)
    : provider_(std::move(provider)), index_(index), handler_(std::move(handler)) {}

Result<std::unique_ptr<Rail>> Rail::open(const std::string& provider, const char* node, std::uint32_t index,
                                         MessageHandler handler) {
  std::unique_ptr<Rail> rail(new Rail(provider, index, std::move(handler)));
  fi_info* info = nullptr;
  int rc = -FI_ENODATA;
  // Without send-after-write order the writer still waits for its writes
  // to complete before it asks for their check. shm is never asked for it:
  // any RMA order there turns off its fast path, where the initiator copies
  // the bytes itself (process_vm_readv/writev) as it posts and the owner
  // only sees a completion; with an order every chunk goes through the
  // owner's progress and shared bounce buffers, at a tenth of the speed.
  const bool ask_order = provider != "shm";
  for (int attempt = 0; attempt < 4 && rc == -FI_ENODATA; ++attempt) {
    const bool ordered = attempt % 2 == 0, provider_keys = attempt >= 2;
    if (ordered && !ask_order) continue;
    fi_info* hints = make_hints(provider, ordered, provider_keys);
    if (hints == nullptr) return fail(ENOMEM, "fi_allocinfo");
    rc = fi_getinfo(FI_VERSION(1, 17), node, nullptr, node != nullptr ? FI_SOURCE : 0, hints, &info);
    fi_freeinfo(hints);
  }
  const std::string where = provider + (node != nullptr ? std::string(" on ") + node : std::string());
  if (rc != 0) return tl::unexpected(fi_error("fi_getinfo " + where, rc));
  // The first answer is the provider's best for this address.
  rail->info_ = fi_dupinfo(info);
  fi_freeinfo(info);
  if (rail->info_ == nullptr) return fail(ENOMEM, "fi_dupinfo");
  rail->virt_addr_ = (rail->info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
  rail->prov_key_ = (rail->info_->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
  rail->send_after_write_ = (rail->info_->tx_attr->msg_order & FI_ORDER_SAW) != 0;
  rail->inject_limit_ = rail->info_->tx_attr->inject_size;
  rc = fi_fabric(rail->info_->fabric_attr, &rail->fabric_, nullptr);
  if (rc != 0) return tl::unexpected(fi_error("fi_fabric " + where, rc));
  rc = fi_domain(rail->fabric_, rail->info_, &rail->domain_, nullptr);
  if (rc != 0) return tl::unexpected(fi_error("fi_domain " + where, rc));
  {
    std::unique_lock lock(rail->lock_);
    if (auto ok = rail->open_endpoint(); !ok) return tl::unexpected(Error{ok.error().code, where + ": " + ok.error().message});
  }
  rail->last_progress_ns_ = now_ns();
  rail->thread_ = std::thread([r = rail.get()] { r->progress_loop(); });
  return rail;
}

Rail::~Rail() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
  std::vector<std::unique_ptr<Op>> ended;
  {
    std::unique_lock lock(lock_);
    close_endpoint(&ended);
  }
  for (auto& op : ended) finish(std::move(op), ECANCELED, 0);
  // The caller may unmap its memory once we are gone.
  for (auto& [key, mr] : regions_) fi_close(&mr->fid);
  if (retired_.empty()) {
    if (av_ != nullptr) fi_close(&av_->fid);
    if (cq_ != nullptr) fi_close(&cq_->fid);
    if (domain_ != nullptr) fi_close(&domain_->fid);
    if (fabric_ != nullptr) fi_close(&fabric_->fid);
  } else {
    // Closing an endpoint a reset set aside crashes inside libfabric 1.17
    // now and then (an rxm endpoint whose connection broke: SIGSEGV in
    // fi_close here, one run of integration_fabric's rail-down case in
    // about twenty), so they stay open, and what they are bound to with
    // them, parked for the rest of the process: nothing reads their
    // queue again, and a late completion has nobody to reach.
    std::vector<fid*> keep;
    for (fid_ep* ep : retired_) keep.push_back(&ep->fid);
    for (fid* f : {av_ != nullptr ? &av_->fid : nullptr, cq_ != nullptr ? &cq_->fid : nullptr,
                   domain_ != nullptr ? &domain_->fid : nullptr, fabric_ != nullptr ? &fabric_->fid : nullptr}) {
      if (f != nullptr) keep.push_back(f);
    }
    park(std::move(keep));
  }
  if (info_ != nullptr) fi_freeinfo(info_);
}

std::string Rail::printable_name() const {
  char buf[256];
  size_t len = sizeof(buf);
  std::shared_lock lock(lock_);
  if (ep_ != nullptr && fi_av_straddr(av_, name_.data(), buf, &len) != nullptr) return std::string(buf);
  return provider_ + " (down)";
}

std::chrono::steady_clock::time_point Rail::last_progress() const {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(last_progress_ns_.load()));
}

Result<void> Rail::open_endpoint() {
  // The completion queue and the address vector outlive resets: closing
  // them under connections the provider is still tearing down crashes
  // inside it (tcp;ofi_rxm 1.17, a link gone). A late completion of an
  // operation the reset ended names an Op no longer tracked and is dropped;
  // should its address be reused, the chunk's checksum still decides.
  int rc = 0;
  if (cq_ == nullptr) {
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_MSG;
    // No wait object. With one (FI_WAIT_FD), rxm's wait set kept the
    // descriptors of connections an endpoint's close had torn down, and
    // the next fi_cq_sread crashed (tcp;ofi_rxm 1.17, a link gone); and
    // even sleeping only in poll() on the descriptor after fi_trywait,
    // never in libfabric, 4 KiB reads were slower on a loaded machine
    // (load 9 on 2 cores, p50: 25-130 us against 20-24 us napping; spinning
    // longer before the sleep, 750-820 us): the queue's reads cost more
    // with a wait object behind them. The progress thread naps instead.
    cq_attr.wait_obj = FI_WAIT_NONE;
    rc = fi_cq_open(domain_, &cq_attr, &cq_, nullptr);
    if (rc != 0) return tl::unexpected(fi_error("fi_cq_open", rc));
  }
  if (av_ == nullptr) {
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_UNSPEC;
    rc = fi_av_open(domain_, &av_attr, &av_, nullptr);
  }
  const char* step = "fi_av_open";
  auto next = [&](const char* name, int result) {
    if (rc != 0) return;
    step = name;
    rc = result;
  };
  if (rc == 0) next("fi_endpoint", fi_endpoint(domain_, info_, &ep_, nullptr));
  if (rc == 0) next("binding the queue", fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV));
  if (rc == 0) next("binding the address vector", fi_ep_bind(ep_, &av_->fid, 0));
  if (rc == 0) next("fi_enable", fi_enable(ep_));
  if (rc == 0) {
    step = "fi_getname";
    std::vector<std::byte> name(hal::kMaxAddressBytes);
    size_t len = name.size();
    rc = fi_getname(&ep_->fid, name.data(), &len);
    if (rc == 0) {
      name.resize(len);
      name_ = std::move(name);
    }
  }
  if (rc != 0) {
    std::vector<std::unique_ptr<Op>> none;
    close_endpoint(&none);
    return tl::unexpected(fi_error(std::string("opening the endpoint: ") + step, rc));
  }
  if (auto ok = post_receives(); !ok) {
    std::vector<std::unique_ptr<Op>> ended;
    close_endpoint(&ended);
    return ok;
  }
  return {};
}

void Rail::close_endpoint(std::vector<std::unique_ptr<Op>>* ended) {
  if (ep_ != nullptr) fi_close(&ep_->fid);
  ep_ = nullptr;
  std::lock_guard guard(ops_mu_);
  for (auto& [raw, op] : ops_) ended->push_back(std::move(op));
  ops_.clear();
}

void Rail::retire_endpoint(std::vector<std::unique_ptr<Op>>* ended) {
  // Closing an rxm endpoint whose connection broke (a link gone) crashes
  // inside libfabric 1.17 now and then: the endpoint is set aside, open,
  // until the rail goes. Its operations end here for their callers; their
  // contexts stay allocated (a late completion must not name a new
  // operation) and untracked (it is dropped).
  if (ep_ != nullptr) retired_.push_back(ep_);
  ep_ = nullptr;
  std::lock_guard guard(ops_mu_);
  for (auto& [raw, op] : ops_) ended->push_back(std::move(op));
  ops_.clear();
}

Result<void> Rail::post_receives() {
  for (int i = 0; i < kReceives; ++i) {
    Op* raw = track(Op::Kind::kRecv, nullptr, 0, std::vector<std::byte>(hal::max_wire_bytes()));
    const ssize_t rc = fi_recv(ep_, raw->buffer.data(), raw->buffer.size(), nullptr, FI_ADDR_UNSPEC, &raw->context);
    if (rc != 0) {
      take_op(raw);
      return tl::unexpected(fi_error("fi_recv", rc));
    }
  }
  return {};
}

void Rail::reset() {
  std::vector<std::unique_ptr<Op>> ended;
  {
    std::unique_lock lock(lock_);
    if (ep_ == nullptr) return;
    retire_endpoint(&ended);
    counters_.resets++;
    // A new endpoint on a new port of the same address (the old one keeps
    // its port); when that fails reopen() is tried again on demand.
    (void)open_endpoint();
  }
  last_progress_ns_ = now_ns();
  for (auto& op : ended) {
    if (op->sink != nullptr) op->sink->op_done(op->tag, ECANCELED);
  }
  std::lock_guard guard(ops_mu_);
  for (auto& op : ended) graveyard_.push_back(std::move(op));
}

Result<void> Rail::reopen() {
  std::unique_lock lock(lock_);
  if (ep_ != nullptr) return {};
  auto ok = open_endpoint();
  if (ok) last_progress_ns_ = now_ns();
  return ok;
}

Result<void> Rail::register_memory(std::uint64_t key, void* base, std::uint64_t length) {
  fid_mr* mr = nullptr;
  const int rc = fi_mr_reg(domain_, base, length, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, key, 0,
                           &mr, nullptr);
  if (rc != 0) return tl::unexpected(fi_error(provider_ + ": fi_mr_reg", rc));
  std::lock_guard guard(regions_mu_);
  regions_[key] = mr;
  return {};
}

void Rail::unregister_memory(std::uint64_t key) {
  std::lock_guard guard(regions_mu_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return;
  fi_close(&it->second->fid);
  regions_.erase(it);
}

std::uint64_t Rail::provider_key(std::uint64_t key) const {
  if (!prov_key_) return key;
  std::lock_guard guard(regions_mu_);
  auto it = regions_.find(key);
  return it == regions_.end() ? key : fi_mr_key(it->second);
}

void* Rail::descriptor(std::uint64_t key) const {
  std::lock_guard guard(regions_mu_);
  auto it = regions_.find(key);
  return it == regions_.end() ? nullptr : fi_mr_desc(it->second);
}

Result<fi_addr_t> Rail::peer_address(std::span<const std::byte> name) {
  std::vector<std::byte> key(name.begin(), name.end());
  std::shared_lock lock(lock_);
  if (ep_ == nullptr) return fail(ENETDOWN, provider_ + " rail " + std::to_string(index_) + " is down");
  std::lock_guard guard(addresses_mu_);
  if (auto it = addresses_.find(key); it != addresses_.end()) return it->second;
  fi_addr_t addr = FI_ADDR_UNSPEC;
  const int n = fi_av_insert(av_, key.data(), 1, &addr, 0, nullptr);
  if (n != 1) return fail(EINVAL, provider_ + ": fi_av_insert refused a peer address");
  addresses_.emplace(std::move(key), addr);
  return addr;
}

std::unique_ptr<Op> Rail::take_op(Op* op) {
  std::lock_guard guard(ops_mu_);
  auto it = ops_.find(op);
  if (it == ops_.end()) return nullptr;
  std::unique_ptr<Op> owned = std::move(it->second);
  ops_.erase(it);
  return owned;
}

Result<void> Rail::post(Op* raw, const std::function<ssize_t()>& call) {
  const auto deadline = std::chrono::steady_clock::now() + kPostPatience;
  while (true) {
    ssize_t rc;
    {
      std::shared_lock lock(lock_);
      if (ep_ == nullptr) {
        if (raw != nullptr) take_op(raw);
        return fail(ENETDOWN, provider_ + " rail " + std::to_string(index_) + " is down");
      }
      rc = call();
    }
    if (rc == 0) return {};
    if (rc != -FI_EAGAIN || std::chrono::steady_clock::now() > deadline) {
      if (raw != nullptr) take_op(raw);
      return tl::unexpected(fi_error(provider_ + ": posting an operation", rc));
    }
    // Queues full: drive progress so that they drain (not from inside a
    // dispatch, which the caller is already in).
    if (dispatch_depth == 0) {
      progress();
    } else {
      std::this_thread::yield();
    }
  }
}

Op* Rail::track(Op::Kind kind, OpSink* sink, std::uint64_t tag, std::vector<std::byte> buffer) {
  auto op = std::make_unique<Op>();
  op->kind = kind;
  op->sink = sink;
  op->tag = tag;
  op->buffer = std::move(buffer);
  Op* raw = op.get();
  // Tracked before it is posted: its completion may come at once.
  std::lock_guard guard(ops_mu_);
  ops_.emplace(raw, std::move(op));
  return raw;
}

Result<void> Rail::post_read(void* local, std::size_t length, std::uint64_t local_key, fi_addr_t peer,
                             std::uint64_t remote_addr, std::uint64_t remote_key, OpSink* sink, std::uint64_t tag) {
  Op* raw = track(Op::Kind::kData, sink, tag, {});
  void* desc = descriptor(local_key);
  auto ok = post(raw, [&] { return fi_read(ep_, local, length, desc, peer, remote_addr, remote_key, &raw->context); });
  if (ok) counters_.chunks++;
  return ok;
}

Result<void> Rail::post_write(const void* local, std::size_t length, std::uint64_t local_key, fi_addr_t peer,
                              std::uint64_t remote_addr, std::uint64_t remote_key, OpSink* sink, std::uint64_t tag) {
  Op* raw = track(Op::Kind::kData, sink, tag, {});
  void* desc = descriptor(local_key);
  auto ok = post(raw, [&] { return fi_write(ep_, local, length, desc, peer, remote_addr, remote_key, &raw->context); });
  if (ok) counters_.chunks++;
  return ok;
}

Result<void> Rail::post_send(std::vector<std::byte> message, fi_addr_t peer, OpSink* sink, std::uint64_t tag) {
  if (message.size() <= inject_limit_) {
    // Copied out by the provider before fi_inject returns, and no
    // completion to read or wait for: one less per control message.
    auto ok = post(nullptr, [&] { return fi_inject(ep_, message.data(), message.size(), peer); });
    if (ok && sink != nullptr) sink->op_done(tag, 0);
    return ok;
  }
  Op* raw = track(Op::Kind::kSend, sink, tag, std::move(message));
  return post(raw, [&] { return fi_send(ep_, raw->buffer.data(), raw->buffer.size(), nullptr, peer, &raw->context); });
}

void Rail::finish(std::unique_ptr<Op> op, int status, std::size_t length) {
  if (status != 0 && status != ECANCELED) counters_.failures++;
  if (op->kind == Op::Kind::kRecv) {
    if (status != 0) return;  // the endpoint is closing
    ++dispatch_depth;
    handler_(*this, std::span<const std::byte>(op->buffer.data(), std::min(length, op->buffer.size())));
    --dispatch_depth;
    // Post it again for the next message.
    Op* raw = op.get();
    std::shared_lock lock(lock_);
    if (ep_ == nullptr) return;
    {
      std::lock_guard guard(ops_mu_);
      ops_.emplace(raw, std::move(op));
    }
    if (fi_recv(ep_, raw->buffer.data(), raw->buffer.size(), nullptr, FI_ADDR_UNSPEC, &raw->context) != 0) {
      take_op(raw);
    }
    return;
  }
  if (op->sink != nullptr) op->sink->op_done(op->tag, status);
}

int Rail::progress() {
  if (polling_.exchange(true, std::memory_order_acquire)) return 0;
  fi_cq_msg_entry entries[kCqBatch];
  struct Done {
    std::unique_ptr<Op> op;
    int status;
    std::size_t length;
  };
  std::vector<Done> done;
  {
    std::shared_lock lock(lock_);
    if (cq_ == nullptr) {
      polling_.store(false, std::memory_order_release);
      return 0;
    }
    const ssize_t n = fi_cq_read(cq_, entries, kCqBatch);
    if (n > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        auto op = take_op(static_cast<Op*>(entries[i].op_context));
        if (op) done.push_back(Done{std::move(op), 0, entries[i].len});
      }
    } else if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(cq_, &err, 0) == 1) {
        auto op = take_op(static_cast<Op*>(err.op_context));
        const int code = err.err > 0 && err.err < 256 ? err.err : EIO;
        if (op) done.push_back(Done{std::move(op), code, 0});
      }
    }
  }
  // Another thread may read the queue while this one dispatches (an
  // owner's checksums take a while).
  polling_.store(false, std::memory_order_release);
  if (!done.empty()) last_progress_ns_ = now_ns();
  for (Done& d : done) finish(std::move(d.op), d.status, d.length);
  return static_cast<int>(done.size());
}

void Rail::progress_loop() {
  // Spin while there is traffic, then nap: the providers here progress only
  // when their queue is read, and a nap is the latency of the next request
  // that finds this side idle, so naps are short and precise (timer slack
  // of 1 us instead of 50) until a long idle.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  int idle = 0;
  while (running_) {
    if (progress() > 0) {
      idle = 0;
      continue;
    }
    if (++idle < 200) continue;
    timespec ts{0, idle < 20000 ? 10'000 : 1'000'000};
    ::nanosleep(&ts, nullptr);
  }
}

}  // namespace cxlpool::drivers::ofi
