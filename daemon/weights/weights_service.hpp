// SPDX-License-Identifier: Apache-2.0
// Shared model weights: each model's safetensors files are validated and
// loaded once into a system named region "cxlpool-w-<model>" (mode 0444:
// every client maps the same pages read-only; no client may write, unlink or
// move it). The region's layout is lib/weights/region_layout.hpp's. Tensors
// past the model's residency budget stay in their files, which clients read
// themselves.
//
// Loading runs on the event loop: the copy is one pass over the resident
// bytes at memory/page-cache speed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../region_pool.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/proto/messages.hpp"

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
};

class WeightsService {
 public:
  explicit WeightsService(RegionPool& pool) : pool_(pool) {}
  ~WeightsService();

  // Loads `req.model` or, when it is loaded from the same files, opens it.
  // EEXIST: loaded from other files; EBADMSG: a malformed file; EACCES: a
  // file the client cannot read; ENOENT: no such tier; ENOSPC: tier full.
  Result<proto::WeightsLoadReply> load(const proto::WeightsLoad& req, const Requester& who);
  // ENOENT when the model is not loaded.
  Result<proto::WeightsLoadReply> open(const std::string& model);
  // Owner or admin (EPERM otherwise); mappings stay valid, the pages go
  // with the last handle.
  Result<proto::WeightsUnloadReply> unload(const std::string& model, const Requester& who);
  proto::WeightsListReply list() const;
  void add_counters(std::vector<proto::Counter>& out) const;
  // Releases every region (shutdown, before the pool goes).
  void clear();

 private:
  struct Model {
    std::string name;
    std::vector<std::string> paths;
    uint64_t region_id = 0;
    uid_t owner_uid = 0;
    uint32_t opens = 0;
    proto::WeightsLoadReply reply;
  };
  void drop(Model& model);

  RegionPool& pool_;
  std::map<std::string, Model> models_;
  WeightsCounters counters_;
};

}  // namespace cxlpool::daemon
