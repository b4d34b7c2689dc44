// SPDX-License-Identifier: Apache-2.0
// The C ABI of cxlpool/weights.h over WeightsModel and WeightStreamer.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "../c_api_support.hpp"
#include "cxlpool/weights.h"
#include "weight_streamer.hpp"
#include "weights_model.hpp"

#define CXLPOOL_EXPORT __attribute__((visibility("default")))

struct cxlpool_weights {
  std::shared_ptr<cxlpool::client::Connection> conn;
  uint64_t region_id = 0;
  std::unique_ptr<cxlpool::client::WeightsModel> model;
};

struct cxlpool_weight_streamer {
  std::unique_ptr<cxlpool::client::WeightStreamer> streamer;
};

namespace {

using cxlpool::Result;
using cxlpool::client::guarded;
using cxlpool::client::record;
namespace proto = cxlpool::proto;

// Maps the model's region read-only and validates its layout.
int open_region(cxlpool_client* client, const proto::WeightsLoadReply& reply, cxlpool_weights** out) {
  auto received = client->conn->call(proto::NamedOpen{reply.region_name, 0});
  if (!received) return record(received.error());
  auto* region = std::get_if<proto::RegionReply>(&received->envelope.message);
  if (region == nullptr || received->fds.size() != 1) return record(EPROTO, "unexpected reply to NamedOpen");
  auto handle = std::make_unique<cxlpool_weights>();
  handle->conn = client->conn;
  handle->region_id = region->region_id;
  auto release = [&] { (void)client->conn->call(proto::RegionFree{region->region_id}); };
  auto mapping = cxlpool::Mapping::map(region->size, PROT_READ, MAP_SHARED, received->fds[0].get());
  if (!mapping) {
    release();
    return record(mapping.error());
  }
  auto model = cxlpool::client::WeightsModel::create(std::move(*mapping));
  if (!model) {
    release();
    return record(model.error());
  }
  handle->model = std::move(*model);
  *out = handle.release();
  return 0;
}

void fill_tensor(const cxlpool::client::WeightsModel& m, size_t i, cxlpool_weight_tensor* out) {
  *out = m.tensor(i);
}

}  // namespace

extern "C" {

CXLPOOL_EXPORT int cxlpool_weights_load(cxlpool_client* client, const char* model, const char* const* paths,
                                        size_t n_paths, const cxlpool_weights_load_options* opts,
                                        cxlpool_weights** out) {
  return guarded([&] {
    if (client == nullptr || model == nullptr || paths == nullptr || out == nullptr || n_paths == 0) {
      return record(EINVAL, "NULL argument or no files");
    }
    if (n_paths > proto::kMaxWeightsFiles) {
      return record(cxlpool::Error{EINVAL, std::to_string(n_paths) + " files, at most " +
                                               std::to_string(proto::kMaxWeightsFiles)});
    }
    proto::WeightsLoad req;
    req.model = model;
    req.tier_id = opts != nullptr ? opts->tier_id : proto::kNoTier;
    req.max_resident_bytes = opts != nullptr ? opts->max_resident_bytes : 0;
    // The files are opened here, with this process's rights, and their
    // descriptors go to the daemon, which never opens a path itself.
    std::vector<cxlpool::UniqueFd> files;
    std::vector<int> fds;
    for (size_t i = 0; i < n_paths; ++i) {
      if (paths[i] == nullptr) return record(EINVAL, "NULL path");
      if (paths[i][0] != '/') return record(cxlpool::Error{EINVAL, std::string(paths[i]) + ": not an absolute path"});
      cxlpool::UniqueFd fd(::open(paths[i], O_RDONLY | O_CLOEXEC | O_NOCTTY));
      if (!fd) return record(cxlpool::fail_errno(paths[i]).value());
      fds.push_back(fd.get());
      files.push_back(std::move(fd));
      req.paths.push_back(proto::WeightsPath{paths[i]});
    }
    auto reply = client->conn->call_for<proto::WeightsLoadReply>(req, fds);
    if (!reply) return record(reply.error());
    return open_region(client, *reply, out);
  });
}

CXLPOOL_EXPORT int cxlpool_weights_open(cxlpool_client* client, const char* model, cxlpool_weights** out) {
  return guarded([&] {
    if (client == nullptr || model == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    auto reply = client->conn->call_for<proto::WeightsLoadReply>(proto::WeightsOpen{model});
    if (!reply) return record(reply.error());
    return open_region(client, *reply, out);
  });
}

CXLPOOL_EXPORT void cxlpool_weights_close(cxlpool_weights* weights) {
  if (weights == nullptr) return;
  (void)guarded([&] {
    weights->model.reset();
    if (!weights->conn->closed()) (void)weights->conn->call(proto::RegionFree{weights->region_id});
    return 0;
  });
  delete weights;
}

CXLPOOL_EXPORT int cxlpool_weights_unload(cxlpool_client* client, const char* model) {
  return guarded([&] {
    if (client == nullptr || model == nullptr) return record(EINVAL, "NULL argument");
    auto reply = client->conn->call_for<proto::WeightsUnloadReply>(proto::WeightsUnload{model});
    return reply ? 0 : record(reply.error());
  });
}

CXLPOOL_EXPORT int cxlpool_weights_count(const cxlpool_weights* weights) {
  if (weights == nullptr) return -EINVAL;
  return static_cast<int>(weights->model->count());
}

CXLPOOL_EXPORT int cxlpool_weights_layers(const cxlpool_weights* weights) {
  if (weights == nullptr) return -EINVAL;
  return weights->model->layers();
}

CXLPOOL_EXPORT int cxlpool_weights_tensor(const cxlpool_weights* weights, size_t index,
                                          cxlpool_weight_tensor* out) {
  return guarded([&] {
    if (weights == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    if (index >= weights->model->count()) return record(ENOENT, "no tensor at that index");
    fill_tensor(*weights->model, index, out);
    return 0;
  });
}

CXLPOOL_EXPORT int cxlpool_weights_find(const cxlpool_weights* weights, const char* name,
                                        cxlpool_weight_tensor* out) {
  return guarded([&] {
    if (weights == nullptr || name == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    size_t i = weights->model->find(name);
    if (i == SIZE_MAX) return record(ENOENT, "no such tensor");
    fill_tensor(*weights->model, i, out);
    return 0;
  });
}

CXLPOOL_EXPORT int cxlpool_weight_streamer_create(cxlpool_weights* weights, const cxlpool_streamer_config* config,
                                                  cxlpool_weight_streamer** out) {
  return guarded([&] {
    if (weights == nullptr || config == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    auto s = cxlpool::client::WeightStreamer::create(*weights->model, *config);
    if (!s) return record(s.error());
    *out = new cxlpool_weight_streamer{std::move(*s)};
    return 0;
  });
}

CXLPOOL_EXPORT void cxlpool_weight_streamer_destroy(cxlpool_weight_streamer* streamer) { delete streamer; }

CXLPOOL_EXPORT int cxlpool_weight_streamer_acquire(cxlpool_weight_streamer* streamer, uint32_t layer,
                                                   cxlpool_streamed_layer* out) {
  return guarded([&] {
    if (streamer == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    auto ok = streamer->streamer->acquire(layer, out);
    return ok ? 0 : record(ok.error());
  });
}

CXLPOOL_EXPORT int cxlpool_weight_streamer_release(cxlpool_weight_streamer* streamer, uint32_t layer) {
  return guarded([&] {
    if (streamer == nullptr) return record(EINVAL, "NULL argument");
    auto ok = streamer->streamer->release(layer);
    return ok ? 0 : record(ok.error());
  });
}

CXLPOOL_EXPORT int cxlpool_weight_streamer_stats(const cxlpool_weight_streamer* streamer,
                                                 cxlpool_streamer_stats* out) {
  if (streamer == nullptr || out == nullptr) return -EINVAL;
  *out = streamer->streamer->stats();
  return 0;
}

}  // extern "C"
