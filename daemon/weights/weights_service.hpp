// SPDX-License-Identifier: Apache-2.0
// Shared model weights: each model's safetensors files are validated and
// loaded once into a system named region "cxlpool-w-<model>": every client
// maps the same pages read-only; no client may write, unlink or move it.
// The region's layout is lib/weights/region_layout.hpp's. Tensors past the
// model's residency budget stay in their files, which clients read
// themselves.
//
// Who may do what (docs/weights.md): the daemon reads only descriptors the
// client opened itself (weights_loader.hpp). The region belongs to the
// loader's uid, is charged to its quota on the tier, and its mode is the
// intersection of the files' read bits; WeightsOpen and NamedOpen check
// that mode. A client that passes descriptors of the very files (same
// device and inode) a loaded model came from has proved it can read them
// and is answered like an open, mode or not.
//
// Nothing a client sends runs long on the event loop: a load checks the
// descriptors (kernel metadata only) on the loop, then the worker thread
// reads and parses the headers and plans the region; the loop creates the
// region (quota and capacity checks) when that is done, then the worker
// writes its meta and copies the resident bytes. The reply is deferred until the copy ends
// (finish_loads). Loads and opens of a model under way wait for it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../region_pool.hpp"
#include "../task_worker.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/proto/messages.hpp"
#include "cxlpool/weights/region_layout.hpp"
#include "weights_loader.hpp"

namespace cxlpool::daemon {

inline constexpr std::string_view kWeightsRegionPrefix = "cxlpool-w-";
// Models being parsed or copied at once: each holds its files' descriptors
// in the daemon until it ends, so the daemon's descriptor table stays bounded.
inline constexpr size_t kMaxLoadsUnderWay = 8;

// Member, and its metric's name after "weights.".
// clang-format off
#define CXLPOOL_WEIGHTS_COUNTERS(X)                                                      \
  X(loads,          "loads")          /* models loaded */                                \
  X(opens,          "opens")          /* loads/opens answered from a loaded model */     \
  X(waited,         "loads_waited")   /* loads/opens that waited for a load under way */ \
  X(unloads,        "unloads")                                                           \
  X(load_errors,    "load_errors")                                                       \
  X(rejected_files, "rejected_files") /* malformed safetensors files */                  \
  X(access_denied,  "access_denied")  /* opens refused by the region's mode */           \
  X(bytes_loaded,   "bytes_loaded")   /* resident tensor bytes copied in */              \
  X(load_ns,        "load_ns_total")                                                     \
  X(parse_ns,       "parse_ns_total") /* reading and parsing headers (worker thread) */
// clang-format on

struct WeightsCounters {
  CXLPOOL_WEIGHTS_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_WEIGHTS_COUNTERS)
};

// Who gets a deferred reply: a session's request.
struct WeightsWaiter {
  uint64_t session_id = 0;
  uint32_t request_id = 0;
};

// A reply now, or nullopt: it comes later from finish_loads().
using WeightsAnswer = std::optional<proto::WeightsLoadReply>;

struct WeightsFinished {
  WeightsWaiter waiter;
  Result<proto::WeightsLoadReply> reply;
};

class WeightsService {
 public:
  explicit WeightsService(RegionPool& pool, weights::ParseLimits limits = {});
  ~WeightsService();

  // Starts the worker thread.
  Result<void> start();
  // Readable when finish_loads() has answers.
  int event_fd() const { return worker_.event_fd(); }

  // Loads `req.model` from `fds` (one per path, opened by the client) or,
  // when it is loaded from the same files (by identity), opens it.
  // EINVAL/EBADF: descriptors that are missing, not for reading, not
  // regular files or one file twice (check_client_files); EEXIST: loaded
  // (or loading) from other files; ENOENT: no such tier; ENODEV: no DRAM
  // tier; EBUSY: kMaxLoadsUnderWay loads under way. Parse (EBADMSG), quota
  // (EDQUOT), capacity (ENOSPC) and copy errors come through finish_loads().
  Result<WeightsAnswer> load(const proto::WeightsLoad& req, std::vector<UniqueFd> fds, const Requester& who,
                             WeightsWaiter waiter);
  // ENOENT when the model is not loaded (nor loading); EACCES when the
  // region's mode denies `who` and this session has not proved access.
  Result<WeightsAnswer> open(const std::string& model, const Requester& who, WeightsWaiter waiter);
  // Whether this session passed descriptors of the files of the loaded
  // model whose region is `region_name` (NamedOpen then skips the mode check).
  bool proved_access(uint64_t session_id, const std::string& region_name) const;
  void forget_session(uint64_t session_id);
  // Owner or admin (EPERM otherwise); EBUSY while its load is under way.
  // Mappings stay valid, the pages go with the last handle.
  Result<proto::WeightsUnloadReply> unload(const std::string& model, const Requester& who);
  // Loaded models (not those still loading).
  proto::WeightsListReply list() const;
  void add_counters(std::vector<proto::Counter>& out) const;
  // Answers for the loads that ended, and creates the region of those whose
  // headers were parsed (then their copy starts). The loader gets `loaded =
  // 1`, the requests that waited an open's reply (or EACCES); a failed load
  // answers them all with its error and drops the model. Waiters whose
  // session is gone are the caller's to skip.
  std::vector<WeightsFinished> finish_loads();
  // Stops the worker thread: a load under way ends with ECANCELED (its
  // answers come from the next finish_loads).
  void stop();
  // Releases every region (shutdown, after stop, before the pool goes).
  void clear();

 private:
  struct Waiter {
    WeightsWaiter to;
    Requester who;
    bool proved = false;  // passed descriptors of the model's files
  };
  enum class Stage { kParsing, kCopying, kLoaded };
  struct Model {
    std::string name;
    uint64_t generation = 0;
    std::vector<std::string> paths;  // labels
    std::vector<FileIdentity> ids;
    uint32_t mode = 0444;
    uint32_t tier_id = 0;
    Requester loader;
    uint64_t region_id = 0;  // 0 while parsing
    uint32_t opens = 0;
    Stage stage = Stage::kParsing;
    std::vector<Waiter> waiters;  // while loading; the loader first
    std::set<uint64_t> proved_sessions;
    uint64_t started_ns = 0;
    proto::WeightsLoadReply reply;
  };
  struct Task {
    bool copy = false;  // false: read and parse the headers and plan
    std::string model;
    uint64_t generation = 0;
    std::unique_ptr<ClientFiles> files;  // parse (a pointer: tasks must move without throwing)
    uint64_t max_resident_bytes = 0;    // parse
    const weights::ParseLimits* limits = nullptr;
    std::shared_ptr<OpenedModelFiles> opened;  // parse's result, copy's input
    weights::RegionPlan plan;
    std::span<std::byte> region;        // copy
    const std::atomic<bool>* cancel = nullptr;
    uint64_t elapsed_ns = 0;
    Result<void> done;
  };
  static void run(Task& task);
  void finish_parse(Task& task, Model& model, std::vector<WeightsFinished>& out);
  void finish_copy(Task& task, Model& model, std::vector<WeightsFinished>& out);
  void fail_model(std::map<std::string, Model>::iterator it, const Error& e, std::vector<WeightsFinished>& out);
  void drop(Model& model);
  bool may_open(const Model& model, const Requester& who, uint64_t session_id) const;
  Result<proto::WeightsLoadReply> open_loaded(Model& model, const Requester& who, uint64_t session_id,
                                              bool proved);
  Error count_failure(const std::string& model, const Error& e);

  RegionPool& pool_;
  weights::ParseLimits limits_;
  std::map<std::string, Model> models_;
  uint64_t next_generation_ = 1;
  WeightsCounters counters_;
  std::atomic<bool> cancel_{false};
  // Last: its thread copies into regions the members above own.
  TaskWorker<Task> worker_;
};

}  // namespace cxlpool::daemon
