// SPDX-License-Identifier: Apache-2.0
// A client of etcd's v3 JSON gateway (grpc-gateway over HTTP/1.1: keys and
// values base64 in JSON, 64-bit integers as decimal strings). Debian ships
// no C++ etcd client; the gateway is part of every etcd server. Only the
// calls pod membership needs: leases, a create-if-absent put, prefix
// listings and a prefix watch. Each call tries the endpoints in order and
// stays with the first that answers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace httplib {
class Client;
}

namespace cxlpool::daemon {

std::string base64_encode(std::string_view bytes);
// Fails (EINVAL) on characters outside the alphabet or a bad length.
Result<std::string> base64_decode(std::string_view text);
// The end of the range of every key that starts with `prefix`.
std::string prefix_range_end(std::string_view prefix);

struct EtcdKeyValue {
  std::string key;
  std::string value;
  uint64_t lease = 0;
  uint64_t create_revision = 0;
  uint64_t mod_revision = 0;
};

struct EtcdRange {
  uint64_t revision = 0;  // the store's revision the listing is from
  std::vector<EtcdKeyValue> kvs;
};

struct EtcdEvent {
  bool deleted = false;  // a DELETE (the key was removed or its lease expired); else a PUT
  EtcdKeyValue kv;
};

// One condition of a transaction: the key's create revision (0: the key is
// absent) or its mod revision equals `revision`.
struct EtcdCompare {
  std::string key;
  bool create = false;  // compare create_revision; else mod_revision
  uint64_t revision = 0;
};

// One write of a transaction: a put bound to `lease` (0: none), or a delete.
struct EtcdWrite {
  std::string key;
  bool erase = false;
  std::string value;
  uint64_t lease = 0;
};

struct EtcdTxnResult {
  bool succeeded = false;  // every compare held and every write was applied
  uint64_t revision = 0;   // the store's revision after it (the writes' mod revision)
};

class EtcdClient {
 public:
  EtcdClient(std::vector<std::string> endpoints, std::chrono::milliseconds timeout);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // A lease of `ttl_s` seconds; its id.
  Result<uint64_t> grant(uint32_t ttl_s);
  // One keepalive; the lease's remaining TTL, 0 when etcd no longer knows it.
  Result<int64_t> keepalive(uint64_t lease);
  Result<void> revoke(uint64_t lease);
  // Puts `value` under `key` bound to `lease` unless the key exists. On
  // failure returns the lease that holds the key (never 0).
  Result<uint64_t> create(const std::string& key, const std::string& value, uint64_t lease);
  // Puts `value` under `key` bound to `lease`, whether or not it exists.
  Result<void> put(const std::string& key, const std::string& value, uint64_t lease);
  Result<EtcdRange> range_prefix(const std::string& prefix);
  // Applies `writes` (each key at most once) only if every compare holds,
  // atomically. A compare that fails is not an error: succeeded is false.
  Result<EtcdTxnResult> txn(const std::vector<EtcdCompare>& compares, const std::vector<EtcdWrite>& writes);
  // Streams events on keys under `prefix` from `start_revision` to
  // `on_events` until the stream ends (an error: the connection closed, it
  // was silent for `idle_limit`, or etcd cancelled the watch, e.g. for a
  // compacted revision) or cancel_watch() is called (ECANCELED).
  Result<void> watch_prefix(const std::string& prefix, uint64_t start_revision, std::chrono::milliseconds idle_limit,
                            const std::function<void(const std::vector<EtcdEvent>&, uint64_t revision)>& on_events);
  // Ends a watch_prefix() running on another thread; later watches end at once.
  void cancel_watch();

  const std::vector<std::string>& endpoints() const { return endpoints_; }

  // Calls etcd as `user` (etcd's authentication enabled): the client gets a
  // token from /v3/auth/authenticate before its first call, sends it as the
  // Authorization header of every call, and gets a new one when etcd says
  // the token is invalid (it expired, or etcd restarted), or when a call
  // with it got no reply at all (etcd 3.4's gateway does not answer a
  // forgotten token: it retries inside until the caller gives up). A failed
  // authentication fails the call (EACCES). Before any call.
  void set_credentials(std::string user, std::string password);

 private:
  // POSTs a JSON body to the gateway; the parsed reply body.
  Result<std::string> post(const char* path, const std::string& body);
  Result<std::string> post_once(const char* path, const std::string& body, const std::string& token,
                                bool& token_refused);
  // The token to send ("" without credentials), authenticating when there is none.
  Result<std::string> token();
  // Forgets `stale` (a token etcd refused), unless another thread has replaced it already.
  void drop_token(const std::string& stale);

  std::vector<std::string> endpoints_;
  std::chrono::milliseconds timeout_;
  std::atomic<size_t> current_{0};  // the endpoint that answered last
  std::mutex watch_mutex_;
  httplib::Client* watch_client_ = nullptr;  // the one a watch_prefix() reads, under watch_mutex_
  std::atomic<bool> cancelled_{false};
  std::mutex auth_mutex_;
  std::string user_;
  std::string password_;
  std::string token_;  // under auth_mutex_
};

}  // namespace cxlpool::daemon
