// SPDX-License-Identifier: Apache-2.0
// Protocol rules the daemon enforces on a raw connection: Hello first, a
// common version, requests only, request ids echoed.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <variant>

#include "cxlpool/proto/messages.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "support/raw_socket.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;

// The next message must be an ErrorReply with `code` for `request_id`.
void expect_error(int fd, int code, uint32_t request_id) {
  auto reply = recv_reply(fd, 5s);
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ(reply->envelope.header.request_id, request_id);
  const auto* error = std::get_if<proto::ErrorReply>(&reply->envelope.message);
  ASSERT_NE(error, nullptr) << "got " << proto::message_type_name(proto::message_type(reply->envelope.message));
  EXPECT_EQ(error->code, code) << error->message;
  EXPECT_TRUE(reply->fds.empty());
}

// The daemon has closed the connection: end of stream, nothing else queued.
void expect_closed(int fd) {
  auto next = recv_reply(fd, 5s);
  ASSERT_FALSE(next) << "unexpected "
                     << proto::message_type_name(proto::message_type(next->envelope.message));
  EXPECT_EQ(next.error().code, ECONNRESET) << next.error().message;
}

template <typename Reply>
Reply expect_reply(int fd, uint32_t request_id) {
  auto reply = recv_reply(fd, 5s);
  if (!reply) {
    ADD_FAILURE() << reply.error().message;
    return {};
  }
  EXPECT_EQ(reply->envelope.header.request_id, request_id);
  const auto* typed = std::get_if<Reply>(&reply->envelope.message);
  if (typed == nullptr) {
    ADD_FAILURE() << "got " << proto::message_type_name(proto::message_type(reply->envelope.message));
    return {};
  }
  return *typed;
}

class Protocol : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(daemon_.start()); }
  UniqueFd connect() {
    UniqueFd fd = raw_connect(daemon_.socket());
    EXPECT_TRUE(fd) << std::strerror(errno);
    return fd;
  }
  DaemonProcess daemon_{TestConfig{}.render()};
};

TEST_F(Protocol, FirstMessageMustBeHello) {
  UniqueFd fd = connect();
  ASSERT_TRUE(send_encoded(fd.get(), 77, proto::StatusRequest{}));
  expect_error(fd.get(), EPROTO, 77);
  expect_closed(fd.get());
}

TEST_F(Protocol, HelloWithNoCommonVersionGivesEprotonosupport) {
  UniqueFd fd = connect();
  proto::Hello hello;
  hello.min_version = 99;
  hello.max_version = 99;
  hello.client_name = "from-the-future";
  ASSERT_TRUE(send_encoded(fd.get(), 5, hello));
  expect_error(fd.get(), EPROTONOSUPPORT, 5);
  expect_closed(fd.get());
}

TEST_F(Protocol, ReplyTypesFromAClientAreRejected) {
  for (const proto::Message& reply : {proto::Message(proto::Ok{}), proto::Message(proto::StatusReply{})}) {
    UniqueFd fd = connect();
    ASSERT_TRUE(send_encoded(fd.get(), 1, proto::Hello{}));
    expect_reply<proto::HelloReply>(fd.get(), 1);
    ASSERT_TRUE(send_encoded(fd.get(), 9, reply));
    expect_error(fd.get(), EPROTO, 9);
    expect_closed(fd.get());
  }
}

TEST_F(Protocol, RequestIdsAreEchoedAndRequestErrorsKeepTheConnection) {
  UniqueFd fd = connect();
  proto::Hello hello;
  hello.client_name = "raw";
  ASSERT_TRUE(send_encoded(fd.get(), 0xdeadbeef, hello));
  const auto welcome = expect_reply<proto::HelloReply>(fd.get(), 0xdeadbeef);
  EXPECT_EQ(welcome.version, proto::kVersionMax);
  EXPECT_NE(welcome.client_id, 0u);
  EXPECT_EQ(welcome.max_message_size, proto::kMaxMessageSize);

  ASSERT_TRUE(send_encoded(fd.get(), 0xffffffff, proto::StatusRequest{}));
  const auto status = expect_reply<proto::StatusReply>(fd.get(), 0xffffffff);
  EXPECT_EQ(status.pid, static_cast<uint32_t>(daemon_.pid()));
  ASSERT_TRUE(send_encoded(fd.get(), 0, proto::TiersRequest{}));
  EXPECT_EQ(expect_reply<proto::TiersReply>(fd.get(), 0).tiers.size(), 2u);

  // An ordinary failure is answered and the connection stays open.
  ASSERT_TRUE(send_encoded(fd.get(), 12345, proto::RegionAlloc{99, 4096, 0}));
  expect_error(fd.get(), ENOENT, 12345);
  ASSERT_TRUE(send_encoded(fd.get(), 12346, proto::RegionFree{424242}));
  expect_error(fd.get(), ENOENT, 12346);
  ASSERT_TRUE(send_encoded(fd.get(), 7, proto::StatusRequest{}));
  expect_reply<proto::StatusReply>(fd.get(), 7);

  // A second Hello breaks the protocol.
  ASSERT_TRUE(send_encoded(fd.get(), 8, proto::Hello{}));
  expect_error(fd.get(), EPROTO, 8);
  expect_closed(fd.get());
}

// A restored clone's connection answers to its recorded leased-region ids:
// an alias frees the region this connection allocated in its place, only
// on this connection, and goes with the region.
TEST_F(Protocol, RegionAliasesAreTheConnectionsOwnLeases) {
  UniqueFd a = connect();
  UniqueFd b = connect();
  ASSERT_TRUE(send_encoded(a.get(), 1, proto::Hello{}));
  expect_reply<proto::HelloReply>(a.get(), 1);
  ASSERT_TRUE(send_encoded(b.get(), 1, proto::Hello{}));
  expect_reply<proto::HelloReply>(b.get(), 1);
  ASSERT_TRUE(send_encoded(a.get(), 2, proto::TiersRequest{}));
  const uint32_t tier = expect_reply<proto::TiersReply>(a.get(), 2).tiers.at(0).id;
  const auto alloc = [&](int fd, uint32_t request_id) {
    EXPECT_TRUE(send_encoded(fd, request_id, proto::RegionAlloc{tier, 4096, 0}));
    return expect_reply<proto::RegionReply>(fd, request_id).region_id;
  };
  const uint64_t first = alloc(a.get(), 3);
  const uint64_t second = alloc(a.get(), 4);
  const uint64_t others = alloc(b.get(), 3);
  ASSERT_TRUE(send_encoded(a.get(), 5, proto::NamedCreate{"alias-named", tier, 4096, 0600, 0}));
  const uint64_t named = expect_reply<proto::RegionReply>(a.get(), 5).region_id;
  // The ids a checkpointed process held: given by this daemon before (to
  // leases that are gone), never one this connection could get later.
  ASSERT_TRUE(send_encoded(a.get(), 6, proto::RegionAlias{first, named + 1}));
  expect_error(a.get(), EINVAL, 6);
  const uint64_t gone = alloc(b.get(), 4);
  const uint64_t also_gone = alloc(b.get(), 5);
  ASSERT_TRUE(send_encoded(b.get(), 6, proto::RegionFree{gone}));
  expect_reply<proto::Ok>(b.get(), 6);
  ASSERT_TRUE(send_encoded(b.get(), 7, proto::RegionFree{also_gone}));
  expect_reply<proto::Ok>(b.get(), 7);
  const uint64_t kOld = gone;

  // Only a lease of this connection, under an id it does not hold, once.
  ASSERT_TRUE(send_encoded(a.get(), 10, proto::RegionAlias{others, kOld}));
  expect_error(a.get(), EINVAL, 10);
  ASSERT_TRUE(send_encoded(a.get(), 11, proto::RegionAlias{named, kOld}));
  expect_error(a.get(), EINVAL, 11);
  ASSERT_TRUE(send_encoded(a.get(), 12, proto::RegionAlias{first, second}));
  expect_error(a.get(), EINVAL, 12);
  ASSERT_TRUE(send_encoded(a.get(), 13, proto::RegionAlias{first, kOld}));
  expect_reply<proto::Ok>(a.get(), 13);
  ASSERT_TRUE(send_encoded(a.get(), 14, proto::RegionAlias{first, also_gone}));
  expect_error(a.get(), EINVAL, 14);
  ASSERT_TRUE(send_encoded(a.get(), 15, proto::RegionAlias{second, kOld}));
  expect_error(a.get(), EINVAL, 15);

  // Another connection's id space is its own.
  ASSERT_TRUE(send_encoded(b.get(), 4, proto::RegionFree{kOld}));
  expect_error(b.get(), ENOENT, 4);

  ASSERT_TRUE(send_encoded(a.get(), 16, proto::RegionFree{kOld}));
  expect_reply<proto::Ok>(a.get(), 16);
  ASSERT_TRUE(send_encoded(a.get(), 17, proto::RegionsRequest{}));
  for (const auto& r : expect_reply<proto::RegionsReply>(a.get(), 17).regions) EXPECT_NE(r.id, first);
  ASSERT_TRUE(send_encoded(a.get(), 18, proto::RegionFree{kOld}));
  expect_error(a.get(), ENOENT, 18);
  // The alias went with its region: the old id may name another lease now.
  ASSERT_TRUE(send_encoded(a.get(), 19, proto::RegionAlias{second, kOld}));
  expect_reply<proto::Ok>(a.get(), 19);
  ASSERT_TRUE(send_encoded(a.get(), 20, proto::RegionFree{kOld}));
  expect_reply<proto::Ok>(a.get(), 20);
}

}  // namespace
}  // namespace cxlpool::integration
