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

#define CXLPOOL_DPDK_ABI_VERSION 2u
#define CXLPOOL_DPDK_ENTRY "cxlpool_dpdk_module"

// One frame. Send: `length` bytes at `data`. Receive: `data` points into
// the port's mbuf (valid until release_received), `length` is the frame's
// whole length and `capacity` the bytes at `data` (less than `length` only
// for a frame the PMD chained over several mbufs: only the first is shown).
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
  // receive mempool (`rx_mbufs` of `rx_room` bytes) and a send mempool
  // (`tx_mbufs` of `tx_room`), one receive and one send queue, and starts
  // the port. 0 with *port set, or -errno.
  int (*port_open)(const char* devargs, uint32_t rx_mbufs, uint32_t rx_room, uint32_t tx_mbufs, uint32_t tx_room,
                   void** port, struct CxlpoolDpdkPortInfo* info);
  // Stops and removes the port and frees its mempools.
  void (*port_close)(void* port);
  // Up to `count` frames received now (rte_eth_rx_burst), shown in place;
  // count or -errno. The port keeps their mbufs until release_received.
  int (*receive)(void* port, struct CxlpoolDpdkFrame* frames, uint32_t count);
  // Frees the mbufs of the last receive.
  void (*release_received)(void* port);
  // Frames copied into mbufs and handed to rte_eth_tx_burst; how many the
  // port took (fewer when its ring is full), or -errno.
  int (*send)(void* port, const struct CxlpoolDpdkFrame* frames, uint32_t count);
};

typedef const struct CxlpoolDpdkModule* (*CxlpoolDpdkEntry)(void);

#ifdef __cplusplus
}
#endif
