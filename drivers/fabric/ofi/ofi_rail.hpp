// SPDX-License-Identifier: Apache-2.0
// One rail of the ofi transport: a libfabric RDM endpoint on one local
// address (or the shm endpoint), its completion queue, address vector and
// memory registrations, and the thread that drives its progress (tcp and
// shm progress only when someone reads the queue, so the owner side of a
// one-sided read needs it too). A rail can be reset: its endpoint is set
// aside (every operation on it ends for its caller) and a new one opened on
// the same local address; requests carry the address to answer to, so the
// peers this side asks follow it.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::drivers::ofi {

class Rail;

// Told when an operation it posted ends: status 0, or a positive errno
// (ECANCELED: the rail was reset under it).
class OpSink {
 public:
  virtual void op_done(std::uint64_t tag, int status) = 0;

 protected:
  ~OpSink() = default;
};

// The context of one posted operation; libfabric's fi_context2 comes first.
struct Op {
  fi_context2 context{};
  enum class Kind : std::uint8_t { kData, kSend, kRecv } kind = Kind::kData;
  OpSink* sink = nullptr;  // null: nobody waits (replies)
  std::uint64_t tag = 0;
  std::vector<std::byte> buffer;  // sends and receives
};

struct RailCounters {
  std::atomic<std::uint64_t> bytes_read{0}, bytes_written{0}, chunks{0}, failures{0}, resets{0};
};

class Rail {
 public:
  // A received control message and the rail it came on.
  using MessageHandler = std::function<void(Rail& rail, std::span<const std::byte> message)>;

  // `node`: the local address to bind (null: the provider's first);
  // `provider`: "tcp;ofi_rxm", "shm". The progress thread starts at once.
  static Result<std::unique_ptr<Rail>> open(const std::string& provider, const char* node, std::uint32_t index,
                                            MessageHandler handler);
  ~Rail();
  Rail(const Rail&) = delete;
  Rail& operator=(const Rail&) = delete;

  std::uint32_t index() const { return index_; }
  const std::string& provider() const { return provider_; }
  const std::vector<std::byte>& name() const { return name_; }
  std::string printable_name() const;
  bool virtual_addressing() const { return virt_addr_; }
  // The provider picks registration keys (verbs): peers need this rail's
  // key of each region (provider_key), which the card carries.
  bool provider_keys() const { return prov_key_; }
  // The provider keeps a message behind the writes posted before it on
  // this rail (FI_ORDER_SAW): a verify message may follow its writes at
  // once instead of after their completions.
  bool send_after_write() const { return send_after_write_; }
  bool up() const { return ep_ != nullptr; }
  RailCounters& counters() { return counters_; }
  // The last time an operation on this rail completed (or it was reset).
  std::chrono::steady_clock::time_point last_progress() const;

  Result<void> register_memory(std::uint64_t key, void* base, std::uint64_t length);
  void unregister_memory(std::uint64_t key);
  // The descriptor of `key`'s registration for local buffers.
  void* descriptor(std::uint64_t key) const;
  // The key peers name `key`'s registration by on this rail: `key` itself
  // unless the provider picks keys.
  std::uint64_t provider_key(std::uint64_t key) const;

  // The peer address `name` in this rail's address vector (inserted on
  // first use: the provider connects on the first operation).
  Result<fi_addr_t> peer_address(std::span<const std::byte> name);

  // One-sided read (remote -> local) or write (local -> remote).
  Result<void> post_read(void* local, std::size_t length, std::uint64_t local_key, fi_addr_t peer,
                         std::uint64_t remote_addr, std::uint64_t remote_key, OpSink* sink, std::uint64_t tag);
  Result<void> post_write(const void* local, std::size_t length, std::uint64_t local_key, fi_addr_t peer,
                          std::uint64_t remote_addr, std::uint64_t remote_key, OpSink* sink, std::uint64_t tag);
  // A control message; sink may be null (a reply nobody waits for). One
  // small enough for the provider's inject limit goes without a completion
  // (its sink is told at once); a lost one shows as a missing answer.
  Result<void> post_send(std::vector<std::byte> message, fi_addr_t peer, OpSink* sink, std::uint64_t tag);

  // Sets the endpoint aside (ending every operation on it with ECANCELED)
  // and opens a new one on the same local address; when that fails the
  // rail stays down until reopen() succeeds.
  void reset();
  // Opens a rail that is down; a no-op for a rail that is up.
  Result<void> reopen();

  // Reads the completion queue once and dispatches what it found; returns
  // how many completions. Any thread may call it.
  int progress();

 private:
  Rail(std::string provider, std::uint32_t index, MessageHandler handler);
  Result<void> open_endpoint();  // under an exclusive lock_
  void close_endpoint(std::vector<std::unique_ptr<Op>>* ended);   // under an exclusive lock_
  void retire_endpoint(std::vector<std::unique_ptr<Op>>* ended);  // under an exclusive lock_
  Result<void> post_receives();   // under a lock_ (any)
  // A new operation in ops_ (owned there until it ends).
  Op* track(Op::Kind kind, OpSink* sink, std::uint64_t tag, std::vector<std::byte> buffer);
  // Calls `call` until the provider takes it (queues full: progress and
  // try again). `op` (may be null) is untracked when it fails.
  Result<void> post(Op* op, const std::function<ssize_t()>& call);
  std::unique_ptr<Op> take_op(Op* op);
  void finish(std::unique_ptr<Op> op, int status, std::size_t length);
  void progress_loop();

  std::string provider_;
  std::uint32_t index_;
  MessageHandler handler_;
  bool virt_addr_ = false;
  bool prov_key_ = false;
  bool send_after_write_ = false;
  std::size_t inject_limit_ = 0;  // the provider's tx inject_size

  fi_info* info_ = nullptr;  // with src_addr set to name_ after the first open
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  // The endpoint: replaced by a reset, so every use holds lock_ shared, a
  // reset holds it exclusively. The queue and address vector stay.
  mutable std::shared_mutex lock_;
  fid_ep* ep_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  std::vector<std::byte> name_;

  std::mutex addresses_mu_;
  std::map<std::vector<std::byte>, fi_addr_t> addresses_;

  mutable std::mutex regions_mu_;
  std::unordered_map<std::uint64_t, fid_mr*> regions_;

  std::mutex ops_mu_;
  std::unordered_map<Op*, std::unique_ptr<Op>> ops_;
  // Endpoints a reset set aside (under lock_ exclusively), and the contexts
  // of the operations they had (under ops_mu_).
  std::vector<fid_ep*> retired_;
  std::vector<std::unique_ptr<Op>> graveyard_;
  std::atomic<std::int64_t> last_progress_ns_{0};
  // One thread reads the queue at a time: the providers serialize it
  // anyway (tcp and rxm under a lock, shm under a spin lock shared with the
  // peer process), and a second reader only spins on their locks.
  std::atomic<bool> polling_{false};
  RailCounters counters_;

  std::atomic<bool> running_{true};
  std::thread thread_;
};

}  // namespace cxlpool::drivers::ofi
