// SPDX-License-Identifier: Apache-2.0
// Descriptors that are kernel objects a restore makes again (eventfds, pipes
// and unix socketpairs whose both ends the process holds, listening unix
// sockets) and the words for the sockets it cannot.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/ckpt/proc_text.hpp"
#include "cxlpool/ckpt/socket_text.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt::detail {

// One descriptor as classified: its entry (and object), or why it cannot be
// checkpointed ("an eventfd ...", "a tcp socket ...").
struct ClassifiedFd {
  FdEntry entry;
  std::optional<FdObject> object;
  std::string what;     // supported: what it is, in words
  std::string refusal;  // non-empty: refused, and why
};

// An eventfd from its fdinfo: the object, or the refusal in *refusal.
std::optional<FdObject> eventfd_object(int fd, const FdInfo& info, std::string* refusal);

// The process's socket tables, read once per capture.
class SocketTables {
 public:
  explicit SocketTables(pid_t pid) : pid_(pid) {}
  // A unix socket that is one end of a connected, unnamed pair with an
  // empty queue (a socketpair candidate: its peer must be in the process
  // too), or a listening one with no connection waiting (c.entry.kind
  // says which), or c.refusal naming family, type and address.
  std::optional<FdObject> classify(ClassifiedFd& c, uint64_t inode);

 private:
  void load();
  std::optional<FdObject> listener(int fd, const UnixSocketRow& row, const std::string& head, std::string* refusal);
  std::string describe_other(int fd, uint64_t inode);
  pid_t pid_;
  bool loaded_ = false;
  std::map<uint64_t, UnixSocketRow> unix_;
  std::map<uint64_t, NetlinkSocketRow> netlink_;
  std::map<uint64_t, std::pair<std::string, InetSocketRow>> inet_;  // protocol name, row
};

// Pipes and socketpairs whose other end the process does not hold become
// refusals; the others are supported.
void pair_fd_objects(std::vector<ClassifiedFd>& fds);
// Each supported pipe's capacity and buffered bytes, onto its first fd's
// object (the bytes are written back at once: the process is left as it
// was). `pid` is frozen.
Result<void> read_pipe_contents(pid_t pid, std::vector<ClassifiedFd>& fds);

}  // namespace cxlpool::ckpt::detail
