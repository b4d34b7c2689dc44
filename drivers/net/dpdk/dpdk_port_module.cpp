// SPDX-License-Identifier: Apache-2.0
// cxlpool-dpdk-port.so: the only code that includes DPDK's headers and links
// its libraries. It does what the driver asks through dpdk_module_abi.h and
// keeps no policy of its own (which EAL arguments, when to clean up: the
// driver decides).
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_version.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <unistd.h>
#include <string>

#include "dpdk_module_abi.h"

namespace {

// Mbufs per rx/tx burst; a larger request takes several.
constexpr uint16_t kBurst = 64;
constexpr uint16_t kRingDescriptors = 1024;

struct Port {
  uint16_t id = 0;
  rte_mempool* pool = nullptr;
  rte_device* device = nullptr;
};

int negative_rte_errno(int fallback) { return -(rte_errno != 0 ? rte_errno : fallback); }

const char* module_version() { return rte_version(); }

void module_set_log_stream(FILE* stream) { rte_openlog_stream(stream); }

int module_eal_init(int argc, char** argv) {
  // getopt's globals are EAL's to use during parsing, then the program's again.
  const int saved_optind = optind;
  const int r = rte_eal_init(argc, argv);
  optind = saved_optind;
  return r < 0 ? negative_rte_errno(EINVAL) : 0;
}

int module_eal_cleanup() {
  return rte_eal_cleanup() < 0 ? negative_rte_errno(EIO) : 0;
}

void release(Port* port) {
  if (port->device != nullptr) {
    rte_eth_dev_stop(port->id);
    // Closes the ethdev too (the vdev driver's remove).
    rte_dev_remove(port->device);
  }
  if (port->pool != nullptr) rte_mempool_free(port->pool);
  delete port;
}

int module_port_open(const char* devargs, uint32_t mbufs, uint32_t data_room, void** out, CxlpoolDpdkPortInfo* info) {
  auto* port = new (std::nothrow) Port;
  if (port == nullptr) return -ENOMEM;
  rte_errno = 0;
  if (const int r = rte_dev_probe(devargs); r < 0) {
    delete port;
    return r;
  }
  const std::string args(devargs);
  const std::string name = args.substr(0, args.find(','));
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port->id) != 0) {
    delete port;
    return -ENODEV;
  }
  rte_eth_dev_info dev_info{};
  if (const int r = rte_eth_dev_info_get(port->id, &dev_info); r != 0) {
    delete port;
    return r;
  }
  port->device = dev_info.device;
  // The pool is named after the port: names are unique within the process.
  const std::string pool_name = "cxlpool_mb" + std::to_string(port->id);
  port->pool = rte_pktmbuf_pool_create(pool_name.c_str(), mbufs, 0, 0,
                                       static_cast<uint16_t>(data_room + RTE_PKTMBUF_HEADROOM), rte_socket_id());
  if (port->pool == nullptr) {
    const int r = negative_rte_errno(ENOMEM);
    release(port);
    return r;
  }
  rte_eth_conf conf{};
  int r = rte_eth_dev_configure(port->id, 1, 1, &conf);
  if (r == 0) r = rte_eth_rx_queue_setup(port->id, 0, kRingDescriptors, rte_socket_id(), nullptr, port->pool);
  if (r == 0) r = rte_eth_tx_queue_setup(port->id, 0, kRingDescriptors, rte_socket_id(), nullptr);
  if (r == 0) r = rte_eth_dev_start(port->id);
  rte_ether_addr mac{};
  if (r == 0) r = rte_eth_macaddr_get(port->id, &mac);
  if (r != 0) {
    release(port);
    return r < 0 ? r : -r;
  }
  info->port_id = port->id;
  std::memcpy(info->mac, mac.addr_bytes, sizeof(info->mac));
  std::snprintf(info->driver, sizeof(info->driver), "%s", dev_info.driver_name != nullptr ? dev_info.driver_name : "");
  *out = port;
  return 0;
}

void module_port_close(void* port) { release(static_cast<Port*>(port)); }

// Copies a (possibly chained) mbuf's bytes into `out`, up to its capacity.
void copy_out(const rte_mbuf* m, CxlpoolDpdkFrame& out) {
  out.length = m->pkt_len;
  auto* to = static_cast<uint8_t*>(out.data);
  uint32_t room = out.capacity;
  for (const rte_mbuf* seg = m; seg != nullptr && room > 0; seg = seg->next) {
    const uint32_t n = std::min<uint32_t>(room, seg->data_len);
    std::memcpy(to, rte_pktmbuf_mtod(seg, const uint8_t*), n);
    to += n;
    room -= n;
  }
}

int module_receive(void* opaque, CxlpoolDpdkFrame* frames, uint32_t count) {
  auto* port = static_cast<Port*>(opaque);
  rte_mbuf* mbufs[kBurst];
  uint32_t done = 0;
  while (done < count) {
    const auto want = static_cast<uint16_t>(std::min<uint32_t>(kBurst, count - done));
    const uint16_t got = rte_eth_rx_burst(port->id, 0, mbufs, want);
    for (uint16_t i = 0; i < got; ++i) {
      copy_out(mbufs[i], frames[done + i]);
      rte_pktmbuf_free(mbufs[i]);
    }
    done += got;
    if (got < want) break;
  }
  return static_cast<int>(done);
}

int module_send(void* opaque, const CxlpoolDpdkFrame* frames, uint32_t count) {
  auto* port = static_cast<Port*>(opaque);
  rte_mbuf* mbufs[kBurst];
  uint32_t done = 0;
  while (done < count) {
    const auto want = static_cast<uint16_t>(std::min<uint32_t>(kBurst, count - done));
    // Out of mbufs: the ones in flight come back as the port sends them.
    if (rte_pktmbuf_alloc_bulk(port->pool, mbufs, want) != 0) break;
    for (uint16_t i = 0; i < want; ++i) {
      const CxlpoolDpdkFrame& f = frames[done + i];
      char* data = rte_pktmbuf_append(mbufs[i], static_cast<uint16_t>(f.length));
      if (data == nullptr) {
        rte_pktmbuf_free_bulk(mbufs, want);
        return -EMSGSIZE;
      }
      std::memcpy(data, f.data, f.length);
    }
    const uint16_t sent = rte_eth_tx_burst(port->id, 0, mbufs, want);
    if (sent < want) rte_pktmbuf_free_bulk(mbufs + sent, want - sent);
    done += sent;
    if (sent < want) break;
  }
  return static_cast<int>(done);
}

constexpr CxlpoolDpdkModule kModule{
    CXLPOOL_DPDK_ABI_VERSION, &module_version,     &module_set_log_stream, &module_eal_init, &module_eal_cleanup,
    &module_port_open,        &module_port_close, &module_receive,        &module_send,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const CxlpoolDpdkModule* cxlpool_dpdk_module() { return &kModule; }
