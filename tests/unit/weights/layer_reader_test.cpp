// SPDX-License-Identifier: Apache-2.0
// LayerReader (the streamer's O_DIRECT pipeline) and copy_to_window: bytes
// land where the ops say across layers whose reads overlap, with and
// without registered buffers; failures end their job only; the copy is
// exact at every alignment.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cxlpool/common/mapping.hpp"
#include "layer_reader.hpp"
#include "window_copy.hpp"

namespace cxlpool::client {
namespace {

constexpr uint64_t kAlign = 4096;

// A file of `bytes` whose byte i is a function of i (not periodic in 1 MiB).
class PatternFile {
 public:
  explicit PatternFile(uint64_t bytes) {
    char tmpl[] = "/var/tmp/cxlpool-reader-XXXXXX";
    int fd = ::mkstemp(tmpl);
    path_ = tmpl;
    std::vector<uint8_t> buf(bytes);
    for (uint64_t i = 0; i < bytes; ++i) buf[i] = at(i);
    EXPECT_EQ(::write(fd, buf.data(), bytes), static_cast<ssize_t>(bytes));
    ::fsync(fd);
    ::close(fd);
  }
  ~PatternFile() { ::unlink(path_.c_str()); }
  static uint8_t at(uint64_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 13); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::map<uint64_t, Result<void>> run(LayerReader& r) {
  std::map<uint64_t, Result<void>> out;
  while (!r.idle()) {
    for (auto& d : r.step()) out.emplace(d.id, d.status);
  }
  return out;
}

TEST(LayerReader, OverlappingLayersLandInTheirSlots) {
  const uint64_t span = (3u << 20) + 5 * kAlign;  // four reads, the last short
  PatternFile file(6 * span + 1000);             // the last span runs past the end
  for (bool registered : {false, true}) {
    const uint64_t slot_bytes = 2 * span + kAlign;
    auto window = Mapping::map(3 * slot_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1).value();
    LayerReader r({file.path()}, kAlign, 4);
    if (registered) {
      std::vector<iovec> iov;
      for (int s = 0; s < 3; ++s) iov.push_back(iovec{window.data() + s * slot_bytes, slot_bytes});
      r.set_registered(iov);
    }
    // Slot s gets spans 2s (at 0) and 2s+1 (at span + kAlign): two ops each.
    for (uint64_t s = 0; s < 3; ++s) {
      std::vector<CopyOp> ops{CopyOp{true, 0, nullptr, 2 * s * span, span, 0},
                              CopyOp{false, 0, nullptr, 0, 0, 0},  // region ops are not the reader's
                              CopyOp{true, 0, nullptr, (2 * s + 1) * span, span, span + kAlign}};
      r.add(s, ops, window.data() + s * slot_bytes, registered ? static_cast<int>(s) : -1);
    }
    EXPECT_TRUE(r.has_unissued());
    auto done = run(r);
    ASSERT_EQ(done.size(), 3u);
    for (uint64_t s = 0; s < 3; ++s) {
      ASSERT_TRUE(done.at(s)) << done.at(s).error().message;
      const auto* base = reinterpret_cast<const uint8_t*>(window.data() + s * slot_bytes);
      for (int half = 0; half < 2; ++half) {
        const uint64_t file_at = (2 * s + half) * span;
        const uint64_t dst = half == 0 ? 0 : span + kAlign;
        const uint64_t n = std::min<uint64_t>(span, 6 * span + 1000 - file_at);
        for (uint64_t i = 0; i < n; i += 4093) {
          ASSERT_EQ(base[dst + i], PatternFile::at(file_at + i)) << "slot " << s << " half " << half << " at " << i;
        }
        ASSERT_EQ(base[dst + n - 1], PatternFile::at(file_at + n - 1));
      }
    }
    EXPECT_GT(r.busy_ns(), 0u);
    EXPECT_FALSE(r.has_unissued());
  }
}

TEST(LayerReader, AFailedFileEndsOnlyItsJob) {
  PatternFile file(1u << 20);
  auto window = Mapping::map(2u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1).value();
  LayerReader r({file.path(), "/nonexistent/cxlpool-model.safetensors"}, kAlign, 4);
  std::vector<CopyOp> bad{CopyOp{true, 1, nullptr, 0, kAlign, 0}};
  std::vector<CopyOp> good{CopyOp{true, 0, nullptr, 0, 1u << 20, 0}};
  std::vector<CopyOp> misaligned{CopyOp{true, 0, nullptr, 100, kAlign, 0}};
  r.add(7, bad, window.data(), -1);
  r.add(8, good, window.data() + (1u << 20), -1);
  r.add(9, misaligned, window.data(), -1);
  auto done = run(r);
  ASSERT_EQ(done.size(), 3u);
  ASSERT_FALSE(done.at(7));
  EXPECT_EQ(done.at(7).error().code, ENOENT);
  EXPECT_NE(done.at(7).error().message.find("nonexistent"), std::string::npos);
  ASSERT_TRUE(done.at(8)) << done.at(8).error().message;
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(window.data())[(1u << 20) + 12345], PatternFile::at(12345));
  ASSERT_FALSE(done.at(9));
  EXPECT_EQ(done.at(9).error().code, EINVAL);
}

TEST(WindowCopy, ExactAtEveryAlignmentAndSize) {
  std::vector<uint8_t> src((4u << 20) + 256), dst(src.size() + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = PatternFile::at(i);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, kNonTemporalMinBytes - 1, kNonTemporalMinBytes,
                       kNonTemporalMinBytes + 77, size_t{4u << 20}}) {
    for (size_t off : {0, 1, 15, 16, 33}) {
      std::memset(dst.data(), 0xEE, dst.size());
      copy_to_window(dst.data() + off, src.data() + (off * 3) % 64, bytes);
      ASSERT_EQ(std::memcmp(dst.data() + off, src.data() + (off * 3) % 64, bytes), 0) << bytes << " " << off;
      if (off > 0) {
        ASSERT_EQ(dst[off - 1], 0xEE);
      }
      ASSERT_EQ(dst[off + bytes], 0xEE) << bytes << " " << off;
    }
  }
}

}  // namespace
}  // namespace cxlpool::client
