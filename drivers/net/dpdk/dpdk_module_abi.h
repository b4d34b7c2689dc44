// SPDX-License-Identifier: Apache-2.0
// The narrow interface between the dpdk driver (linked into programs, no
// DPDK) and cxlpool-dpdk-port.so (linked with DPDK, loaded with dlopen only
// after the CPU check: Debian's DPDK libraries run SSE4.2 code in their
// constructors). Plain C types only, so that neither side's C++ objects
// cross the boundary; the driver refuses a module of another CXLPOOL_DPDK_ABI_VERSION.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CXLPOOL_DPDK_ABI_VERSION 1u
#define CXLPOOL_DPDK_ENTRY "cxlpool_dpdk_module"

// One frame in or out. Receive: `capacity` bytes at `data` to fill;
// `length` comes back as the frame's whole length, which may exceed
// `capacity` (then only `capacity` bytes were copied).
struct CxlpoolDpdkFrame {
  void* data;
  uint32_t capacity;
  uint32_t length;
};

// What the opened port says about itself.
struct CxlpoolDpdkPortInfo {
  uint16_t port_id;
  uint8_t mac[6];
  char driver[48];  // the PMD's name (net_af_packet, net_af_xdp)
};

struct CxlpoolDpdkModule {
  uint32_t abi_version;
  const char* (*version)(void);  // rte_version()
  // Sends DPDK's log to `stream` from now on (before eal_init as well).
  void (*set_log_stream)(FILE* stream);
  // rte_eal_init; 0, or -errno (rte_errno).
  int (*eal_init)(int argc, char** argv);
  // rte_eal_cleanup; 0 or -errno.
  int (*eal_cleanup)(void);
  // Probes the vdev `devargs` ("net_af_packet_x,iface=eth1,..."), makes a
  // mempool of `mbufs` buffers of `data_room` bytes, one receive and one
  // send queue, and starts the port. 0 with *port set, or -errno.
  int (*port_open)(const char* devargs, uint32_t mbufs, uint32_t data_room, void** port, struct CxlpoolDpdkPortInfo* info);
  // Stops and removes the port and frees its mempool.
  void (*port_close)(void* port);
  // Frames received now (rte_eth_rx_burst), copied out; count or -errno.
  int (*receive)(void* port, struct CxlpoolDpdkFrame* frames, uint32_t count);
  // Frames copied into mbufs and handed to rte_eth_tx_burst; how many the
  // port took (fewer when its ring is full), or -errno.
  int (*send)(void* port, const struct CxlpoolDpdkFrame* frames, uint32_t count);
};

typedef const struct CxlpoolDpdkModule* (*CxlpoolDpdkEntry)(void);

#ifdef __cplusplus
}
#endif
