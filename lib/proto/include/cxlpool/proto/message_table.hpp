// SPDX-License-Identifier: Apache-2.0
// Every control message, once. messages.hpp derives MsgType, the Message
// variant and MessageTraits from this list; the codec's type table, the
// descriptor counts of socket_io.hpp and the daemon's dispatch follow from
// those. docs/protocol.md §6 is the normative form of the same table (a unit
// test compares the two) and says how to add a message.
//
// X(type, code, id, kind, answer, fds):
//   type    the payload struct in cxlpool::proto
//   code    its MsgType enumerator
//   id      the header's type field on the wire; never reuse or renumber one
//   kind    Request (client to daemon) or Reply (daemon to client)
//   answer  the reply a request gets when it succeeds (any request may get
//           ErrorReply instead); void for replies
//   fds     descriptors the message carries in SCM_RIGHTS, at most
//           (WeightsLoad: one per path, see descriptor_count(const Message&);
//           CkptCreate: its pidfd when pid is 0; CkptRestore: none or three)
//
// The order is the Message variant's order; it is not on the wire.
#pragma once

// clang-format off
#define CXLPOOL_PROTO_MESSAGES(X)                                                              \
  X(Hello,                kHello,                 1, Request, HelloReply,           0)         \
  X(HelloReply,           kHelloReply,            2, Reply,   void,                 0)         \
  X(ErrorReply,           kError,                 3, Reply,   void,                 0)         \
  X(Ok,                   kOk,                    4, Reply,   void,                 0)         \
  X(StatusRequest,        kStatus,               10, Request, StatusReply,          0)         \
  X(StatusReply,          kStatusReply,          11, Reply,   void,                 0)         \
  X(TiersRequest,         kTiers,                12, Request, TiersReply,           0)         \
  X(TiersReply,           kTiersReply,           13, Reply,   void,                 0)         \
  X(RegionAlloc,          kRegionAlloc,          20, Request, RegionReply,          0)         \
  X(RegionReply,          kRegionReply,          21, Reply,   void,                 1)         \
  X(RegionFree,           kRegionFree,           22, Request, Ok,                   0)         \
  X(NamedCreate,          kNamedCreate,          23, Request, RegionReply,          0)         \
  X(NamedOpen,            kNamedOpen,            24, Request, RegionReply,          0)         \
  X(NamedUnlink,          kNamedUnlink,          25, Request, Ok,                   0)         \
  X(RegionsRequest,       kRegions,              26, Request, RegionsReply,         0)         \
  X(RegionsReply,         kRegionsReply,         27, Reply,   void,                 0)         \
  X(RegionMigrate,        kRegionMigrate,        28, Request, MigrateReply,         0)         \
  X(MigrateReply,         kMigrateReply,         29, Reply,   void,                 0)         \
  X(ClientsRequest,       kClients,              30, Request, ClientsReply,         0)         \
  X(ClientsReply,         kClientsReply,         31, Reply,   void,                 0)         \
  X(StatsRequest,         kStats,                32, Request, StatsReply,           0)         \
  X(StatsReply,           kStatsReply,           33, Reply,   void,                 0)         \
  X(BackendsRequest,      kBackends,             34, Request, BackendsReply,        0)         \
  X(BackendsReply,        kBackendsReply,        35, Reply,   void,                 0)         \
  X(AccessRingOpen,       kAccessRingOpen,       40, Request, AccessRingReply,      0)         \
  X(AccessRingReply,      kAccessRingReply,      41, Reply,   void,                 1)         \
  X(TieringStatusRequest, kTieringStatus,        42, Request, TieringStatusReply,   0)         \
  X(TieringStatusReply,   kTieringStatusReply,   43, Reply,   void,                 0)         \
  X(TieringHot,           kTieringHot,           44, Request, TieringHotReply,      0)         \
  X(TieringHotReply,      kTieringHotReply,      45, Reply,   void,                 0)         \
  X(TieringSet,           kTieringSet,           46, Request, TieringSetReply,      0)         \
  X(TieringSetReply,      kTieringSetReply,      47, Reply,   void,                 0)         \
  X(KvOpen,               kKvOpen,               50, Request, KvOpenReply,          0)         \
  X(KvOpenReply,          kKvOpenReply,          51, Reply,   void,                 4)         \
  X(KvNamespaceOpen,      kKvNamespaceOpen,      52, Request, KvNamespaceReply,     0)         \
  X(KvNamespaceReply,     kKvNamespaceReply,     53, Reply,   void,                 2)         \
  X(KvStatusRequest,      kKvStatus,             54, Request, KvStatusReply,        0)         \
  X(KvStatusReply,        kKvStatusReply,        55, Reply,   void,                 0)         \
  X(KvNamespacesRequest,  kKvNamespaces,         56, Request, KvNamespacesReply,    0)         \
  X(KvNamespacesReply,    kKvNamespacesReply,    57, Reply,   void,                 0)         \
  X(KvNamespaceDrop,      kKvNamespaceDrop,      58, Request, KvNamespaceDropReply, 0)         \
  X(KvNamespaceDropReply, kKvNamespaceDropReply, 59, Reply,   void,                 0)         \
  X(WeightsLoad,          kWeightsLoad,          60, Request, WeightsLoadReply,     0)         \
  X(WeightsLoadReply,     kWeightsLoadReply,     61, Reply,   void,                 0)         \
  X(WeightsOpen,          kWeightsOpen,          62, Request, WeightsLoadReply,     0)         \
  X(WeightsUnload,        kWeightsUnload,        63, Request, WeightsUnloadReply,   0)         \
  X(WeightsUnloadReply,   kWeightsUnloadReply,   64, Reply,   void,                 0)         \
  X(WeightsListRequest,   kWeightsList,          65, Request, WeightsListReply,     0)         \
  X(WeightsListReply,     kWeightsListReply,     66, Reply,   void,                 0)         \
  X(GpuHostAlloc,         kGpuHostAlloc,         67, Request, GpuHostAllocReply,    0)         \
  X(GpuHostAllocReply,    kGpuHostAllocReply,    68, Reply,   void,                 1)         \
  X(DevRegister,          kDevRegister,          70, Request, DevRegisterReply,     0)         \
  X(DevRegisterReply,     kDevRegisterReply,     71, Reply,   void,                 1)         \
  X(DevHeartbeat,         kDevHeartbeat,         72, Request, DevHeartbeatReply,    0)         \
  X(DevHeartbeatReply,    kDevHeartbeatReply,    73, Reply,   void,                 0)         \
  X(DevAttach,            kDevAttach,            74, Request, DevAttachReply,       0)         \
  X(DevAttachReply,       kDevAttachReply,       75, Reply,   void,                 1)         \
  X(DevDetach,            kDevDetach,            76, Request, Ok,                   0)         \
  X(DevListRequest,       kDevList,              77, Request, DevListReply,         0)         \
  X(DevListReply,         kDevListReply,         78, Reply,   void,                 0)         \
  X(DevFailover,          kDevFailover,          79, Request, DevFailoverReply,     0)         \
  X(DevFailoverReply,     kDevFailoverReply,     80, Reply,   void,                 0)         \
  X(CkptCreate,           kCkptCreate,           81, Request, CkptListReply,        1)         \
  X(CkptRestore,          kCkptRestore,          82, Request, CkptRestoreReply,     3)         \
  X(CkptRestoreReply,     kCkptRestoreReply,     83, Reply,   void,                 0)         \
  X(CkptListRequest,      kCkptList,             84, Request, CkptListReply,        0)         \
  X(CkptListReply,        kCkptListReply,        85, Reply,   void,                 0)         \
  X(CkptRemove,           kCkptRemove,           86, Request, Ok,                   0)         \
  X(RegionAlias,          kRegionAlias,          87, Request, Ok,                   0)         \
  X(PodStatusRequest,     kPodStatus,            95, Request, PodStatusReply,       0)         \
  X(PodStatusReply,       kPodStatusReply,       96, Reply,   void,                 0)
// clang-format on
