// SPDX-License-Identifier: Apache-2.0
// Checkpoints as pool objects (docs/ckpt.md "Through the daemon"). A
// create checks on the event loop that the client could trace the target
// itself (trace_permission.hpp), then the worker thread captures it
// (lib/ckpt capture_to_image) into a memfd whose pages it allocates on the
// tier's node; back on the loop the image becomes a region of the pool
// (leased to nobody, owned by the client, charged to its quota on the tier,
// listed by `cxlpoolctl regions`, movable like any region), and the reply
// goes out. A restore runs cxlpool-restore on the worker with the image
// and the caller's stdio; the clones keep running in pid namespaces of
// their own. Removing a checkpoint releases its region: clones map the
// image's file, so theirs stays until they exit.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../region_pool.hpp"
#include "../task_worker.hpp"
#include "client_resources.hpp"
#include "cxlpool/ckpt/capture.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/proto/messages.hpp"

namespace cxlpool::daemon {

// Member, and its metric's name after "ckpt.".
// clang-format off
#define CXLPOOL_CKPT_COUNTERS(X)                                                       \
  X(creates,         "creates")          /* checkpoints made */                        \
  X(restores,        "restores")         /* restores that started every clone */       \
  X(clones,          "clones")           /* clones started */                          \
  X(removes,         "removes")                                                        \
  X(bytes,           "bytes")            /* image bytes captured */                    \
  X(refused,         "refused")          /* creates refused: the client may not trace */ \
  X(create_errors,   "create_errors")                                                  \
  X(restore_errors,  "restore_errors")                                                 \
  X(capture_ns,      "capture_ns_total")                                               \
  X(restore_ns,      "restore_ns_total")
// clang-format on

struct CkptCounters {
  CXLPOOL_CKPT_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_CKPT_COUNTERS)
};

// Who gets a deferred reply: a session's request.
struct CkptWaiter {
  uint64_t session_id = 0;
  uint32_t request_id = 0;
};

struct CkptFinished {
  CkptWaiter waiter;
  Result<proto::Message> reply;  // CkptListReply or CkptRestoreReply
};

// The client as the permission check sees it.
struct CkptClient {
  Requester who;
  pid_t pid = 0;  // from SO_PEERCRED: whose capabilities count
};

class CkptService {
 public:
  // `restore_program`: cxlpool-restore (empty: restores fail with ENOENT).
  // `restore_timeout`: a restore whose cxlpool-restore has not exited (every
  // clone reported) by then fails with ETIMEDOUT, the restorer and the
  // keepers it started killed, so that the worker takes the next request.
  CkptService(RegionPool& pool, std::filesystem::path restore_program,
              std::chrono::milliseconds restore_timeout = std::chrono::minutes(1));
  // Where cxlpoold listens: recorded in checkpoints of its clients, whose
  // restores connect there again.
  void set_control_socket(std::string path) { control_socket_ = std::move(path); }
  // Which connection holds a lease, and under which id (on the event loop).
  void set_lease_holder(LeaseHolderFn fn) { lease_holder_ = std::move(fn); }
  ~CkptService();

  Result<void> start();
  // Readable when finish() has answers.
  int event_fd() const { return worker_.event_fd(); }

  // Checks and queues a checkpoint; the answer comes from finish().
  // EINVAL: a pidfd missing or extra; EEXIST: the name is taken (or being
  // made); ENOENT: no such tier; EPERM: the client may not trace the
  // target; ESRCH: it is gone; EDQUOT: its image (image_estimate.hpp) would
  // not fit the client's quota on the tier beside what it holds and the
  // captures of its still under way. The capture then refuses an image over
  // what was left (CaptureOptions::max_image_bytes) before it kills the
  // target, and the region's creation checks the quota exactly.
  Result<void> create(const proto::CkptCreate& req, std::vector<UniqueFd> fds, const CkptClient& client,
                      CkptWaiter waiter);
  // ENOENT: no such checkpoint; EPERM: not the owner (nor an admin);
  // EINVAL: a descriptor count other than 0 or 3.
  Result<void> restore(const proto::CkptRestore& req, std::vector<UniqueFd> fds, const Requester& who,
                       CkptWaiter waiter);
  // ENOENT, EPERM as above.
  Result<void> remove(const std::string& name, const Requester& who);
  proto::CkptListReply list() const;
  void add_counters(std::vector<proto::Counter>& out) const;
  // Answers for the tasks that ended; captures become regions here.
  std::vector<CkptFinished> finish();
  void stop();
  // Releases every checkpoint's region (shutdown, after stop).
  void clear();

 private:
  struct Checkpoint {
    proto::CkptEntry entry;
  };
  struct Task {
    bool capture = true;  // false: a restore
    std::string name;
    CkptWaiter waiter;
    Requester who;
    // Capture.
    pid_t pid = 0;
    UniqueFd pidfd;  // the checked process (sent, or opened at the check): the capture freezes only it
    std::vector<ckpt::CaptureOptions::RegionFile> region_files;  // the pool's regions when it was queued
    std::string control_socket;
    bool kill_after = false;
    uint64_t max_image_bytes = 0;  // 0: no quota
    uint32_t tier_id = 0;
    int node = -1;  // the tier's node, or -1: no binding
    UniqueFd image_fd;
    uint64_t image_bytes = 0;
    uint32_t threads = 0;
    // Restore.
    UniqueFd image;                // a descriptor of the image region's file
    std::vector<UniqueFd> stdio;   // none or three
    proto::CkptPolicy policy = proto::CkptPolicy::kMow;
    uint32_t count = 1;
    std::filesystem::path program;
    std::chrono::milliseconds timeout{0};
    std::vector<proto::CkptClone> clones;
    uint64_t elapsed_ns = 0;
    Result<void> done;
  };
  static void run(Task& task);
  static void capture(Task& task);
  static void start_clones(Task& task);
  CkptFinished finish_capture(Task& task);
  CkptFinished finish_restore(Task& task);
  uint32_t default_tier() const;
  std::string control_socket_;
  LeaseHolderFn lease_holder_ = [](uint64_t, uint64_t) { return LeaseHolder{}; };

  RegionPool& pool_;
  std::filesystem::path restore_program_;
  std::chrono::milliseconds restore_timeout_;
  std::map<std::string, Checkpoint> checkpoints_;
  // Captures under way: what each is expected to charge whom.
  struct PendingCapture {
    uid_t uid = 0;
    uint32_t tier_id = 0;
    uint64_t estimate = 0;
  };
  std::map<std::string, PendingCapture> pending_names_;
  CkptCounters counters_;
  // Last: its thread must stop before the members above go.
  TaskWorker<Task> worker_;
};

// cxlpool-restore for this daemon: next to the daemon's binary, in the
// build tree's tools/ckpt-restore, or the installed bindir; empty if none.
std::filesystem::path find_restore_program();

}  // namespace cxlpool::daemon
