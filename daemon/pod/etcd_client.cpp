// SPDX-License-Identifier: Apache-2.0
#include "etcd_client.hpp"

#include <cerrno>
#include <cstring>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace cxlpool::daemon {
namespace {

using json = nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char c) {
  const char* at = c == '\0' ? nullptr : std::strchr(kAlphabet, c);
  return at == nullptr ? -1 : static_cast<int>(at - kAlphabet);
}

// grpc-gateway writes int64 and uint64 fields as decimal strings (proto3
// JSON); an absent field is zero.
uint64_t read_u64(const json& doc, const char* field) {
  const auto it = doc.find(field);
  if (it == doc.end()) return 0;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer()) return static_cast<uint64_t>(it->get<int64_t>());
  if (!it->is_string()) return 0;
  const std::string text = it->get<std::string>();
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  return errno == 0 && end != text.c_str() && *end == '\0' ? value : 0;
}

Result<EtcdKeyValue> read_kv(const json& kv) {
  if (!kv.is_object()) return fail(EPROTO, "etcd: a key-value is not an object");
  EtcdKeyValue out;
  const auto key = kv.find("key");
  if (key == kv.end() || !key->is_string()) return fail(EPROTO, "etcd: a key-value without a key");
  auto k = base64_decode(key->get<std::string>());
  if (!k) return fail(EPROTO, "etcd: key: " + k.error().message);
  out.key = std::move(*k);
  if (const auto value = kv.find("value"); value != kv.end() && value->is_string()) {
    auto v = base64_decode(value->get<std::string>());
    if (!v) return fail(EPROTO, "etcd: value: " + v.error().message);
    out.value = std::move(*v);
  }
  out.lease = read_u64(kv, "lease");
  out.create_revision = read_u64(kv, "create_revision");
  out.mod_revision = read_u64(kv, "mod_revision");
  return out;
}

Result<json> parse_reply(const std::string& body) {
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return fail(EPROTO, "etcd: reply is not a JSON object");
  // grpc-gateway reports a failed call as {"error": ..., "code": N, "message": ...}.
  if (doc.contains("error") || (doc.contains("code") && doc.contains("message"))) {
    return fail(EIO, "etcd: " + doc.value("message", doc.value("error", std::string("error"))));
  }
  return doc;
}

std::unique_ptr<httplib::Client> make_client(const std::string& endpoint, std::chrono::milliseconds timeout) {
  auto client = std::make_unique<httplib::Client>(endpoint);
  client->set_connection_timeout(timeout);
  client->set_read_timeout(timeout);
  client->set_write_timeout(timeout);
  client->set_keep_alive(false);
  return client;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<uint8_t>(bytes[i])} << 16) |
                       (uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8) | static_cast<uint8_t>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(v >> shift) & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest != 0) {
    uint32_t v = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return fail(EINVAL, "base64 length not a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (pad == 1 && text[i + 2] == '=') return fail(EINVAL, "base64 padding in the wrong place");
    uint32_t v = 0;
    for (int j = 0; j < 4 - pad; ++j) {
      const int d = base64_value(text[i + j]);
      if (d < 0) return fail(EINVAL, "not a base64 character");
      v |= static_cast<uint32_t>(d) << (18 - 6 * j);
    }
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

std::string prefix_range_end(std::string_view prefix) {
  std::string end(prefix);
  // The next key after every key with this prefix: the last byte that is
  // not 0xff, plus one, with what follows it dropped.
  while (!end.empty()) {
    auto& back = reinterpret_cast<unsigned char&>(end.back());
    if (back != 0xff) {
      ++back;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // the whole key space
}

EtcdClient::EtcdClient(std::vector<std::string> endpoints, std::chrono::milliseconds timeout)
    : endpoints_(std::move(endpoints)), timeout_(timeout) {}

EtcdClient::~EtcdClient() = default;

void EtcdClient::set_credentials(std::string user, std::string password) {
  std::lock_guard lock(auth_mutex_);
  user_ = std::move(user);
  password_ = std::move(password);
  token_.clear();
}

Result<std::string> EtcdClient::token() {
  std::lock_guard lock(auth_mutex_);
  if (user_.empty() || !token_.empty()) return token_;
  bool refused = false;
  auto body = post_once("/v3/auth/authenticate", json{{"name", user_}, {"password", password_}}.dump(), "", refused);
  if (!body) {
    if (body.error().message.find("authentication failed") != std::string::npos) {
      return fail(EACCES, "etcd: authentication as '" + user_ + "' failed: wrong user or password");
    }
    return tl::unexpected(body.error());
  }
  auto doc = parse_reply(*body);
  if (!doc) return tl::unexpected(doc.error());
  const auto token = doc->find("token");
  if (token == doc->end() || !token->is_string() || token->get<std::string>().empty()) {
    return fail(EPROTO, "etcd: authentication reply without a token");
  }
  token_ = token->get<std::string>();
  return token_;
}

void EtcdClient::drop_token(const std::string& stale) {
  std::lock_guard lock(auth_mutex_);
  if (token_ == stale) token_.clear();
}

Result<std::string> EtcdClient::post(const char* path, const std::string& body) {
  // A token etcd no longer knows is replaced once per call.
  for (int attempt = 0;; ++attempt) {
    auto token_now = token();
    if (!token_now) return tl::unexpected(token_now.error());
    bool refused = false;
    auto reply = post_once(path, body, *token_now, refused);
    if (reply || !refused || attempt == 1) return reply;
    drop_token(*token_now);
  }
}

Result<std::string> EtcdClient::post_once(const char* path, const std::string& body, const std::string& token,
                                          bool& token_refused) {
  if (endpoints_.empty()) return fail(EINVAL, "etcd: no endpoint");
  std::string errors;
  const size_t first = current_.load();
  for (size_t n = 0; n < endpoints_.size(); ++n) {
    const size_t index = (first + n) % endpoints_.size();
    auto client = make_client(endpoints_[index], timeout_);
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", token);
    auto reply = client->Post(path, headers, body, "application/json");
    if (reply && reply->status == 200) {
      current_ = index;
      return reply->body;
    }
    // etcd's gateway answers a token etcd no longer knows (an etcd
    // restart forgets simple tokens) by retrying inside until the caller
    // gives up: a call with a token that got no reply may have met one.
    if (!token.empty() && (reply ? reply->body.find("invalid auth token") != std::string::npos
                                 : reply.error() == httplib::Error::Read)) {
      token_refused = true;
    }
    if (!errors.empty()) errors += "; ";
    errors += endpoints_[index] + ": ";
    errors += reply ? "HTTP " + std::to_string(reply->status) + " " + reply->body.substr(0, 200)
                    : "no reply (" + httplib::to_string(reply.error()) + ")";
  }
  return fail(EHOSTUNREACH, "etcd " + std::string(path) + ": " + errors);
}

Result<uint64_t> EtcdClient::grant(uint32_t ttl_s) {
  auto body = post("/v3/lease/grant", json{{"TTL", std::to_string(ttl_s)}}.dump());
  if (!body) return tl::unexpected(body.error());
  auto doc = parse_reply(*body);
  if (!doc) return tl::unexpected(doc.error());
  const uint64_t id = read_u64(*doc, "ID");
  if (id == 0) return fail(EPROTO, "etcd: lease grant without an ID");
  return id;
}

Result<int64_t> EtcdClient::keepalive(uint64_t lease) {
  auto body = post("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump());
  if (!body) return tl::unexpected(body.error());
  // A stream of one response: {"result": {"ID": ..., "TTL": ...}}; no TTL
  // when the lease is gone.
  auto doc = parse_reply(*body);
  if (!doc) return tl::unexpected(doc.error());
  const auto result = doc->find("result");
  if (result == doc->end() || !result->is_object()) return fail(EPROTO, "etcd: keepalive reply without a result");
  return static_cast<int64_t>(read_u64(*result, "TTL"));
}

Result<void> EtcdClient::revoke(uint64_t lease) {
  auto body = post("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump());
  if (!body) return tl::unexpected(body.error());
  auto doc = parse_reply(*body);
  if (!doc) return tl::unexpected(doc.error());
  return {};
}

Result<uint64_t> EtcdClient::create(const std::string& key, const std::string& value, uint64_t lease) {
  const std::string k = base64_encode(key);
  const json request = {
      {"compare", json::array({{{"key", k}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}}})},
      {"success",
       json::array({{{"request_put", {{"key", k}, {"value", base64_encode(value)}, {"lease", std::to_string(lease)}}}}})},
      {"failure", json::array({{{"request_range", {{"key", k}}}}})}};
  auto body = post("/v3/kv/txn", request.dump());
  if (!body) return tl::unexpected(body.error());
  auto doc = parse_reply(*body);
  if (!doc) return tl::unexpected(doc.error());
  if (doc->value("succeeded", false)) return lease;
  // The failure branch listed the key: who holds it.
  uint64_t holder = 0;
  if (const auto responses = doc->find("responses"); responses != doc->end() && responses->is_array()) {
    for (const json& r : *responses) {
      const auto range = r.find("response_range");
      if (range == r.end() || !range->contains("kvs")) continue;
      for (const json& kv : (*range)["kvs"]) holder = read_u64(kv, "lease");
    }
  }
  return fail(EEXIST, "etcd: " + key + " is held by lease " + std::to_string(holder));
}

Result<void> EtcdClient::put(const std::string& key, const std::string& value, uint64_t lease) {
  const json request = {
      {"key", base64_encode(key)}, {"value", base64_encode(value)}, {"lease", std::to_string(lease)}};
  auto body = post("/v3/kv/put", request.dump());
  if (!body) return tl::unexpected(body.error());
  auto doc = parse_reply(*body);
  if (!doc) return tl::unexpected(doc.error());
  return {};
}

Result<EtcdTxnResult> EtcdClient::txn(const std::vector<EtcdCompare>& compares,
                                     const std::vector<EtcdWrite>& writes) {
  json compare = json::array();
  for (const EtcdCompare& c : compares) {
    const char* field = c.create ? "create_revision" : "mod_revision";
    compare.push_back({{"key", base64_encode(c.key)},
                       {"target", c.create ? "CREATE" : "MOD"},
                       {"result", "EQUAL"},
                       {field, std::to_string(c.revision)}});
  }
  json success = json::array();
  for (const EtcdWrite& w : writes) {
    if (w.erase) {
      success.push_back({{"request_delete_range", {{"key", base64_encode(w.key)}}}});
    } else {
      json put = {{"key", base64_encode(w.key)}, {"value", base64_encode(w.value)}};
      if (w.lease != 0) put["lease"] = std::to_string(w.lease);
      success.push_back({{"request_put", put}});
    }
  }
  auto body = post("/v3/kv/txn", json{{"compare", compare}, {"success", success}}.dump());
  if (!body) return tl::unexpected(body.error());
  auto doc = parse_reply(*body);
  if (!doc) return tl::unexpected(doc.error());
  EtcdTxnResult out;
  const auto succeeded = doc->find("succeeded");
  out.succeeded = succeeded != doc->end() && succeeded->is_boolean() && succeeded->get<bool>();
  if (const auto header = doc->find("header"); header != doc->end()) out.revision = read_u64(*header, "revision");
  if (out.revision == 0) return fail(EPROTO, "etcd: txn reply without a revision");
  return out;
}

Result<EtcdRange> EtcdClient::range_prefix(const std::string& prefix) {
  const json request = {{"key", base64_encode(prefix)}, {"range_end", base64_encode(prefix_range_end(prefix))}};
  auto body = post("/v3/kv/range", request.dump());
  if (!body) return tl::unexpected(body.error());
  auto doc = parse_reply(*body);
  if (!doc) return tl::unexpected(doc.error());
  EtcdRange out;
  if (const auto header = doc->find("header"); header != doc->end()) out.revision = read_u64(*header, "revision");
  if (out.revision == 0) return fail(EPROTO, "etcd: range reply without a revision");
  if (const auto kvs = doc->find("kvs"); kvs != doc->end()) {
    if (!kvs->is_array()) return fail(EPROTO, "etcd: kvs is not an array");
    for (const json& kv : *kvs) {
      auto parsed = read_kv(kv);
      if (!parsed) return tl::unexpected(parsed.error());
      out.kvs.push_back(std::move(*parsed));
    }
  }
  return out;
}

Result<void> EtcdClient::watch_prefix(
    const std::string& prefix, uint64_t start_revision, std::chrono::milliseconds idle_limit,
    const std::function<void(const std::vector<EtcdEvent>&, uint64_t revision)>& on_events) {
  if (endpoints_.empty()) return fail(EINVAL, "etcd: no endpoint");
  const std::string endpoint = endpoints_[current_.load() % endpoints_.size()];
  auto client = make_client(endpoint, timeout_);
  client->set_read_timeout(idle_limit);
  {
    std::lock_guard lock(watch_mutex_);
    if (cancelled_) return fail(ECANCELED, "etcd: watch cancelled");
    watch_client_ = client.get();
  }
  struct Unregister {
    EtcdClient* self;
    ~Unregister() {
      std::lock_guard lock(self->watch_mutex_);
      self->watch_client_ = nullptr;
    }
  } unregister{this};

  const json create = {{"create_request",
                        {{"key", base64_encode(prefix)},
                         {"range_end", base64_encode(prefix_range_end(prefix))},
                         {"start_revision", std::to_string(start_revision)}}}};
  std::string pending;  // the stream is one JSON object per line
  bool received = false;
  Error failure;
  bool failed = false;
  auto token_now = token();
  if (!token_now) return tl::unexpected(token_now.error());
  httplib::Request request;
  request.method = "POST";
  request.path = "/v3/watch";
  request.body = create.dump();
  request.set_header("Content-Type", "application/json");
  if (!token_now->empty()) request.set_header("Authorization", *token_now);
  request.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    received = true;
    pending.append(data, length);
    size_t line_end;
    while ((line_end = pending.find('\n')) != std::string::npos) {
      const std::string line = pending.substr(0, line_end);
      pending.erase(0, line_end + 1);
      if (line.empty()) continue;
      auto doc = parse_reply(line);
      if (!doc) {
        failure = doc.error();
        failed = true;
        return false;
      }
      const auto result = doc->find("result");
      if (result == doc->end() || !result->is_object()) continue;
      if (result->value("canceled", false)) {
        failure = Error{ECANCELED, "etcd: watch cancelled by the server: " +
                                       result->value("cancel_reason", std::string("no reason given"))};
        failed = true;
        return false;
      }
      uint64_t revision = 0;
      if (const auto header = result->find("header"); header != result->end()) {
        revision = read_u64(*header, "revision");
      }
      std::vector<EtcdEvent> events;
      if (const auto list = result->find("events"); list != result->end() && list->is_array()) {
        for (const json& e : *list) {
          EtcdEvent event;
          event.deleted = e.value("type", std::string()) == "DELETE";
          auto kv = read_kv(e.value("kv", json::object()));
          if (!kv) {
            failure = kv.error();
            failed = true;
            return false;
          }
          event.kv = std::move(*kv);
          events.push_back(std::move(event));
        }
      }
      if (!events.empty()) on_events(events, revision);
    }
    return !cancelled_.load();
  };
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client->send(request, response, error);
  if (failed && failure.message.find("invalid auth token") != std::string::npos) drop_token(*token_now);
  if (failed) return tl::unexpected(failure);
  if (cancelled_) return fail(ECANCELED, "etcd: watch cancelled");
  // Silent from the start (a token etcd forgot, see post_once) or refused.
  if (!token_now->empty() && (!received || response.status == 401)) drop_token(*token_now);
  if (!sent) return fail(EPIPE, "etcd watch at " + endpoint + " ended: " + httplib::to_string(error));
  return fail(EPIPE, "etcd watch at " + endpoint + " ended with HTTP " + std::to_string(response.status));
}

void EtcdClient::cancel_watch() {
  cancelled_ = true;
  std::lock_guard lock(watch_mutex_);
  if (watch_client_ != nullptr) watch_client_->stop();
}

}  // namespace cxlpool::daemon
