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
  rte_mempool* rx_pool = nullptr;
  rte_mempool* tx_pool = nullptr;
  rte_device* device = nullptr;
  rte_mbuf* held[kBurst] = {};  // the last receive's mbufs
  uint16_t held_count = 0;
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
  rte_pktmbuf_free_bulk(port->held, port->held_count);
  if (port->rx_pool != nullptr) rte_mempool_free(port->rx_pool);
  if (port->tx_pool != nullptr) rte_mempool_free(port->tx_pool);
  delete port;
}

rte_mempool* make_pool(const std::string& name, uint32_t mbufs, uint32_t room) {
  return rte_pktmbuf_pool_create(name.c_str(), mbufs, 0, 0, static_cast<uint16_t>(room + RTE_PKTMBUF_HEADROOM),
                                 rte_socket_id());
}

int module_port_open(const char* devargs, uint32_t rx_mbufs, uint32_t rx_room, uint32_t tx_mbufs, uint32_t tx_room,
                     void** out, CxlpoolDpdkPortInfo* info) {
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
  // The pools are named after the port: names are unique within the process.
  port->rx_pool = make_pool("cxlpool_rx" + std::to_string(port->id), rx_mbufs, rx_room);
  port->tx_pool = port->rx_pool == nullptr ? nullptr : make_pool("cxlpool_tx" + std::to_string(port->id), tx_mbufs, tx_room);
  if (port->tx_pool == nullptr) {
    const int r = negative_rte_errno(ENOMEM);
    release(port);
    return r;
  }
  rte_eth_conf conf{};
  int r = rte_eth_dev_configure(port->id, 1, 1, &conf);
  if (r == 0) r = rte_eth_rx_queue_setup(port->id, 0, kRingDescriptors, rte_socket_id(), nullptr, port->rx_pool);
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

int module_receive(void* opaque, CxlpoolDpdkFrame* frames, uint32_t count) {
  auto* port = static_cast<Port*>(opaque);
  rte_pktmbuf_free_bulk(port->held, port->held_count);
  port->held_count = rte_eth_rx_burst(port->id, 0, port->held, static_cast<uint16_t>(std::min<uint32_t>(kBurst, count)));
  for (uint16_t i = 0; i < port->held_count; ++i) {
    const rte_mbuf* m = port->held[i];
    frames[i] = {rte_pktmbuf_mtod(m, void*), m->data_len, m->pkt_len};
  }
  return port->held_count;
}

void module_release_received(void* opaque) {
  auto* port = static_cast<Port*>(opaque);
  rte_pktmbuf_free_bulk(port->held, port->held_count);
  port->held_count = 0;
}

int module_send(void* opaque, const CxlpoolDpdkFrame* frames, uint32_t count) {
  auto* port = static_cast<Port*>(opaque);
  rte_mbuf* mbufs[kBurst];
  uint32_t done = 0;
  while (done < count) {
    const auto want = static_cast<uint16_t>(std::min<uint32_t>(kBurst, count - done));
    // Out of mbufs: the ones in flight come back as the port sends them.
    if (rte_pktmbuf_alloc_bulk(port->tx_pool, mbufs, want) != 0) break;
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
    &module_port_open,        &module_port_close, &module_receive,        &module_release_received, &module_send,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const CxlpoolDpdkModule* cxlpool_dpdk_module() { return &kModule; }
