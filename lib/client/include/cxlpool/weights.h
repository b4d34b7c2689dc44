/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcxlpool: shared model weights and layer streaming (C ABI).
 * docs/weights.md describes them; this header is the contract.
 *
 * The daemon loads a model's safetensors files once per host (every header
 * validated: JSON, dtypes, shapes, offsets inside the file, no overlaps) into
 * a daemon-owned named region on a chosen tier; every process maps the same
 * pages read-only. Tensors that do not fit the region budget stay in their
 * files and are read with O_DIRECT when streamed.
 *
 * A tensor belongs to layer N when its name has a ".layers.N." or ".h.N."
 * component (the Llama/GPT-2 naming); other tensors are "global" (embedding,
 * final norm, head) and always resident.
 *
 * Errors are negative errno values:
 *   -EINVAL bad argument (a relative path, one file listed twice under any
 *   name), -EBADMSG a malformed safetensors file (the daemon's log and
 *   cxlpool_last_error() name the file and the reason), -ENOENT unknown
 *   model or tensor, -EEXIST a model of that name loaded from other files,
 *   -EACCES the caller may not open a file (load) or the model's region
 *   (open: its mode is the intersection of its files' read bits), -EDQUOT
 *   the region does not fit the loader's quota, -ENOSPC tier full, -EPERM
 *   not the owner (unload), -EBUSY the model is still loading (unload) or
 *   too many loads are under way (load). Errors of open(2) on a file come
 *   back as they are (-ENOENT, -EACCES, ...), before anything is sent.
 *
 * Lifetimes: tensor names and data pointers are valid while their
 * cxlpool_weights is open; a streamer reads its model's table and mapping,
 * so every cxlpool_weight_streamer of a model must be destroyed before
 * cxlpool_weights_close of that model.
 */
#ifndef CXLPOOL_WEIGHTS_H
#define CXLPOOL_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "cxlpool/cxlpool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cxlpool_weights cxlpool_weights;
typedef struct cxlpool_weight_streamer cxlpool_weight_streamer;

enum cxlpool_weight_dtype {
  CXLPOOL_DTYPE_F32 = 0, CXLPOOL_DTYPE_F16 = 1, CXLPOOL_DTYPE_BF16 = 2, CXLPOOL_DTYPE_F64 = 3,
  CXLPOOL_DTYPE_I8 = 4, CXLPOOL_DTYPE_U8 = 5, CXLPOOL_DTYPE_I16 = 6, CXLPOOL_DTYPE_I32 = 7,
  CXLPOOL_DTYPE_I64 = 8, CXLPOOL_DTYPE_F8_E4M3 = 9, CXLPOOL_DTYPE_F8_E5M2 = 10,
  CXLPOOL_DTYPE_BOOL = 11,
};

#define CXLPOOL_WEIGHTS_MAX_DIMS 8

typedef struct cxlpool_weights_load_options {
  uint32_t tier_id;            /* UINT32_MAX: the first DRAM tier */
  uint32_t reserved;
  uint64_t max_resident_bytes; /* 0: everything resident; else layers past the budget stay in files */
} cxlpool_weights_load_options;

/* Loads `model` from `paths` (absolute) or, when the daemon has it already
 * from the same files (same device and inode, in order), just opens it. The
 * library opens each file with the caller's rights and passes the
 * descriptors: the daemon reads nothing the caller could not. opts may be NULL.
 * Returns when the daemon's copy is complete; a load or open of a model that
 * another client is loading waits for that load. */
int cxlpool_weights_load(cxlpool_client *client, const char *model, const char *const *paths,
                         size_t n_paths, const cxlpool_weights_load_options *opts,
                         cxlpool_weights **out);
/* Opens a model some process loaded: -EACCES when its region's mode denies
 * the caller (load it from its files instead, which proves access). */
int cxlpool_weights_open(cxlpool_client *client, const char *model, cxlpool_weights **out);
/* Destroy the model's streamers first: they use its mapping. */
void cxlpool_weights_close(cxlpool_weights *weights);
/* Drops the daemon's copy (owner or admin); processes that map it keep their mappings. */
int cxlpool_weights_unload(cxlpool_client *client, const char *model);

typedef struct cxlpool_weight_tensor {
  const char *name;          /* valid while the cxlpool_weights is open */
  uint32_t dtype;            /* enum cxlpool_weight_dtype */
  uint32_t ndim;
  uint64_t shape[CXLPOOL_WEIGHTS_MAX_DIMS];
  uint64_t bytes;
  const void *data;          /* in the shared region (read-only); NULL when not resident */
  int32_t layer;             /* -1: global */
  uint32_t file_index;       /* which of the load's files */
  uint64_t file_offset;      /* the tensor's bytes in that file */
} cxlpool_weight_tensor;

int cxlpool_weights_count(const cxlpool_weights *weights);           /* tensors */
int cxlpool_weights_layers(const cxlpool_weights *weights);          /* highest layer + 1 */
int cxlpool_weights_tensor(const cxlpool_weights *weights, size_t index, cxlpool_weight_tensor *out);
int cxlpool_weights_find(const cxlpool_weights *weights, const char *name, cxlpool_weight_tensor *out);

/* ---- Layer streaming ---- */

enum cxlpool_streamer_target {
  CXLPOOL_STREAM_HOST = 0,  /* the window is host memory (CPU compute) */
  CXLPOOL_STREAM_CUDA = 1,  /* the window is device memory on `device` (-ENODEV without a usable one) */
};

typedef struct cxlpool_streamer_config {
  uint32_t target;          /* enum cxlpool_streamer_target */
  int32_t device;
  uint32_t buffers;         /* layer slots in the window, 2..8 (double/triple buffering) */
  uint32_t prefetch_depth;  /* layers copied ahead of the one in use, < buffers */
  uint64_t pinned_budget_bytes; /* layers the placement policy may keep in the window for good; 0: none */
  double compute_ns_per_byte;   /* declared compute cost per weight byte, for the placement policy; 0: measure */
} cxlpool_streamer_config;

/* The streamer uses `weights` until it is destroyed: destroy it before
 * cxlpool_weights_close(weights). -EINVAL bad config, -ENODEV target CUDA
 * without a usable device or in a build without CUDA (cxlpool_last_error()
 * says which), -ENOMEM window memory. With target CUDA, data[] of an
 * acquired layer are CUdeviceptr values in the device's primary context. */
int cxlpool_weight_streamer_create(cxlpool_weights *weights, const cxlpool_streamer_config *config,
                                   cxlpool_weight_streamer **out);
void cxlpool_weight_streamer_destroy(cxlpool_weight_streamer *streamer);

/* A layer's tensors in the compute window: tensor i of the layer (in the
 * order cxlpool_weights_tensor lists them) is at data[i]. Waits until the
 * layer's copy is done and starts copies of the next prefetch_depth layers
 * (wrapping to layer 0 after the last, as decoding does token after token). */
typedef struct cxlpool_streamed_layer {
  uint32_t layer;
  uint32_t n_tensors;
  const uint64_t *data;     /* host pointers or CUdeviceptr values, one per tensor */
  const uint32_t *tensor_index; /* index for cxlpool_weights_tensor, one per tensor */
} cxlpool_streamed_layer;
int cxlpool_weight_streamer_acquire(cxlpool_weight_streamer *streamer, uint32_t layer,
                                    cxlpool_streamed_layer *out);
/* The caller is done with the layer; its slot may be refilled. */
int cxlpool_weight_streamer_release(cxlpool_weight_streamer *streamer, uint32_t layer);

typedef struct cxlpool_streamer_stats {
  uint64_t layers_copied, bytes_copied;      /* from the shared region */
  uint64_t layers_read, bytes_read;          /* from files (O_DIRECT) */
  uint64_t copy_ns_total, read_ns_total;
  uint64_t wait_ns_total;                    /* time acquire() blocked */
  uint64_t acquires, hits_resident;          /* layers the policy pinned in the window */
  uint32_t pinned_layers;
  /* Target CUDA: 1 when the shared region is registered with the driver
   * (read-only mappings with CU_MEMHOSTREGISTER_READ_ONLY), so region bytes
   * go up with DMA straight from it; 0 when the driver refused (the reason
   * is logged once, at warning level, through the log callback) and they go
   * through a pinned staging slot, or for target HOST. */
  uint32_t region_registered;
  uint64_t layers_direct, bytes_direct; /* CUDA: region layers/bytes DMA'd from the registered region */
  uint64_t layers_staged, bytes_staged; /* CUDA: region layers/bytes copied through a staging slot first */
} cxlpool_streamer_stats;
int cxlpool_weight_streamer_stats(const cxlpool_weight_streamer *streamer, cxlpool_streamer_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* CXLPOOL_WEIGHTS_H */
