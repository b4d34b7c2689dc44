// SPDX-License-Identifier: Apache-2.0
// The fd objects section of a manifest: eventfds, pipes and socketpairs
// round trip, a manifest without them encodes as before, and every rule of
// the validator about them rejects what breaks it.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "cxlpool/ckpt/manifest_codec.hpp"
#include "cxlpool/ckpt/manifest_validate.hpp"
#include "support/ckpt_sample_manifest.hpp"

namespace cxlpool::ckpt {
namespace {

Manifest with_objects() { return test::sample_manifest_with_fd_objects(); }

TEST(CkptFdObjects, RoundTrip) {
  const Manifest m = with_objects();
  ASSERT_TRUE(validate_manifest(m)) << validate_manifest(m).error().message;
  const auto bytes = encode_manifest(m);
  auto decoded = decode_manifest(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(encode_manifest(*decoded), bytes);
  ASSERT_EQ(decoded->fd_objects.size(), 6u);
  EXPECT_EQ(decoded->fd_objects[0].counter, 5u);
  EXPECT_EQ(decoded->fd_objects[0].detail, kEventfdSemaphore);
  EXPECT_EQ(decoded->fd_objects[1].contents, (std::vector<uint8_t>{'a', 'b', 'c'}));
  EXPECT_EQ(decoded->fd_objects[3].peer, 1002u);
  EXPECT_EQ(decoded->fds[4].kind, FdKind::kPipe);
}

TEST(CkptFdObjects, WithoutObjectsTheEncodingHasNoSuchSection) {
  // An image from before the section decodes (it is the same bytes as a
  // manifest with no objects), and one with objects differs only by it.
  const Manifest plain = test::sample_manifest();
  const auto bytes = encode_manifest(plain);
  auto decoded = decode_manifest(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_TRUE(decoded->fd_objects.empty());
  EXPECT_GT(encode_manifest(with_objects()).size(), bytes.size());
}

TEST(CkptFdObjects, ObjectsWithoutTheSectionAreRefused) {
  // An eventfd entry whose object record is missing (an old writer cannot
  // produce it; a damaged file can).
  Manifest m = with_objects();
  m.fd_objects.clear();
  auto r = decode_manifest(encode_manifest(m));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EBADMSG);
  EXPECT_NE(r.error().message.find("no fd object record"), std::string::npos) << r.error().message;
}

TEST(CkptFdObjects, ContentsPastTheLimitAreRefused) {
  Manifest m = with_objects();
  m.fd_objects[1].detail = kMaxPipeBytes;
  m.fd_objects[2].detail = kMaxPipeBytes;
  m.fd_objects[1].contents.assign(kMaxPipeContentsBytes + 1, 'x');
  auto r = decode_manifest(encode_manifest(m));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EBADMSG);
}

struct RuleCase {
  const char* name;
  std::function<void(Manifest&)> change;
  const char* says;
};

TEST(CkptFdObjects, RuleRejections) {
  const RuleCase cases[] = {
      {"object for a file", [](Manifest& m) { m.fd_objects[0].fd = 3; }, "no fd object record"},
      {"extra object", [](Manifest& m) { m.fd_objects.push_back(m.fd_objects.back()); }, "for an fd that has none"},
      {"object order", [](Manifest& m) { std::swap(m.fd_objects[0], m.fd_objects[1]); }, "no fd object record"},
      {"eventfd file", [](Manifest& m) { m.fds[2].file = 0; }, "without a file"},
      {"eventfd flags", [](Manifest& m) { m.fd_objects[0].detail = 6; }, "eventfd flags"},
      {"eventfd counter", [](Manifest& m) { m.fd_objects[0].counter = ~0ull; }, "eventfd flags"},
      {"eventfd contents", [](Manifest& m) { m.fd_objects[0].contents = {1}; }, "eventfd flags"},
      {"dup disagrees", [](Manifest& m) { m.fd_objects[5].counter = 6; }, "disagrees"},
      {"pipe access", [](Manifest& m) { m.fds[3].open_flags = O_RDWR; }, "read-only or write-only"},
      {"pipe capacity", [](Manifest& m) { m.fd_objects[1].detail = 5000; }, "capacity"},
      {"pipe capacity small", [](Manifest& m) { m.fd_objects[1].detail = 2048; }, "capacity"},
      {"pipe overfull",
       [](Manifest& m) {
         m.fd_objects[1].detail = m.fd_objects[2].detail = 4096;
         m.fd_objects[1].contents.assign(4097, 'x');
       },
       "more pipe contents"},
      {"contents on the second fd", [](Manifest& m) { m.fd_objects[2].contents = {'z'}; }, "first fd"},
      {"pipe without writer", [](Manifest& m) { m.fds[4].open_flags = O_RDONLY; }, "both a read and a write end"},
      {"pipe without reader", [](Manifest& m) { m.fds[3].open_flags = O_WRONLY; }, "both a read and a write end"},
      {"socket type", [](Manifest& m) { m.fd_objects[3].detail = m.fd_objects[4].detail = 3; }, "socketpair type"},
      {"socket own peer", [](Manifest& m) { m.fd_objects[3].peer = 1001; }, "socketpair type"},
      {"socket lone", [](Manifest& m) { m.fd_objects[4].peer = 77; }, "without its peer"},
      {"socket peer type",
       [](Manifest& m) { m.fd_objects[4].detail = 2; },
       "without its peer"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Manifest m = with_objects();
    c.change(m);
    auto v = validate_manifest(m);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error().code, EBADMSG);
    EXPECT_NE(v.error().message.find(c.says), std::string::npos) << v.error().message;
    auto d = decode_manifest(encode_manifest(m));
    ASSERT_FALSE(d);
    EXPECT_NE(d.error().message.find(c.says), std::string::npos) << d.error().message;
  }
}

}  // namespace
}  // namespace cxlpool::ckpt
