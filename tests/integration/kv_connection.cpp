// SPDX-License-Identifier: Apache-2.0
#include "kv_connection.hpp"

namespace cxlpool::integration {

KvConnection::KvConnection(const std::string& socket, const std::string& name) {
  error = cxlpool_connect(socket.c_str(), name.c_str(), &client);
  if (error == 0) error = cxlpool_kv_open(client, nullptr, &kv);
}

KvConnection::~KvConnection() {
  cxlpool_kv_close(kv);
  cxlpool_disconnect(client);
}

std::vector<cxlpool_kv_key> chunk_keys(const cxlpool_kv_namespace& ns, const std::vector<uint32_t>& tokens,
                                       const cxlpool_kv_key* parent) {
  if (ns.chunk_tokens == 0) return {};
  std::vector<cxlpool_kv_key> out(tokens.size() / ns.chunk_tokens);
  const int n = cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), parent, out.data(), out.size());
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

}  // namespace cxlpool::integration
