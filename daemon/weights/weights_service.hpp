// SPDX-License-Identifier: Apache-2.0
// Shared model weights: each model's safetensors files are validated and
// loaded once into a system named region "cxlpool-w-<model>" (mode 0444:
// every client maps the same pages read-only; no client may write, unlink or
// move it). The region's layout is lib/weights/region_layout.hpp's. Tensors
// past the model's residency budget stay in their files, which clients read
// themselves.
//
// A load validates the headers and creates the region on the event loop
// (headers are small), then copies the resident bytes on a worker thread
// so the loop keeps serving other clients; the reply is deferred until the
// copy ends (finish_loads). Loads and opens of a model whose copy is under
// way wait for it and are answered with it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../region_pool.hpp"
#include "../task_worker.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/proto/messages.hpp"
#include "cxlpool/weights/region_layout.hpp"
#include "weights_loader.hpp"

namespace cxlpool::daemon {

inline constexpr std::string_view kWeightsRegionPrefix = "cxlpool-w-";

struct WeightsCounters {
  uint64_t loads = 0;           // models loaded
  uint64_t opens = 0;           // loads/opens answered from a loaded model
  uint64_t unloads = 0;
  uint64_t load_errors = 0;
  uint64_t rejected_files = 0;  // malformed safetensors files
  uint64_t bytes_loaded = 0;    // resident tensor bytes copied in
  uint64_t load_ns = 0;
  uint64_t waited = 0;          // loads/opens that waited for a copy under way
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
  explicit WeightsService(RegionPool& pool);
  ~WeightsService();

  // Starts the copy thread.
  Result<void> start();
  // Readable when finish_loads() has answers.
  int event_fd() const { return worker_.event_fd(); }

  // Loads `req.model` or, when it is loaded from the same files, opens it.
  // EEXIST: loaded (or loading) from other files; EBADMSG: a malformed
  // file; EACCES: a file the client cannot read; ENOENT: no such tier;
  // ENOSPC: tier full. Copy errors come through finish_loads().
  Result<WeightsAnswer> load(const proto::WeightsLoad& req, const Requester& who, WeightsWaiter waiter);
  // ENOENT when the model is not loaded (nor loading).
  Result<WeightsAnswer> open(const std::string& model, WeightsWaiter waiter);
  // Owner or admin (EPERM otherwise); EBUSY while its copy is under way.
  // Mappings stay valid, the pages go with the last handle.
  Result<proto::WeightsUnloadReply> unload(const std::string& model, const Requester& who);
  // Loaded models (not those still copying).
  proto::WeightsListReply list() const;
  void add_counters(std::vector<proto::Counter>& out) const;
  // Answers for the copies that ended: the loader gets `loaded = 1`, the
  // requests that waited an open's reply; a failed copy answers them all
  // with its error and drops the model. Waiters whose session is gone are
  // the caller's to skip; the model stays loaded either way.
  std::vector<WeightsFinished> finish_loads();
  // Stops the copy thread: a copy under way ends with ECANCELED (its
  // answers come from the next finish_loads).
  void stop();
  // Releases every region (shutdown, after stop, before the pool goes).
  void clear();

 private:
  struct Model {
    std::string name;
    std::vector<std::string> paths;
    uint64_t region_id = 0;
    uid_t owner_uid = 0;
    uint32_t opens = 0;
    bool loading = false;
    std::vector<WeightsWaiter> waiters;  // while loading; the loader first
    uint64_t started_ns = 0;
    proto::WeightsLoadReply reply;
  };
  struct CopyTask {
    std::string model;
    std::shared_ptr<OpenedModelFiles> opened;
    weights::RegionPlan plan;
    std::span<std::byte> region;
    const std::atomic<bool>* cancel = nullptr;
    Result<void> copied;
  };
  void drop(Model& model);
  Result<proto::WeightsLoadReply> open_loaded(Model& model);
  Error count_failure(const std::string& model, const Error& e);

  RegionPool& pool_;
  std::map<std::string, Model> models_;
  WeightsCounters counters_;
  std::atomic<bool> cancel_{false};
  // Last: its thread copies into regions the members above own.
  TaskWorker<CopyTask> worker_;
};

}  // namespace cxlpool::daemon
