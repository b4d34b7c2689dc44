// SPDX-License-Identifier: Apache-2.0
// The checkpoint image format: round trips through memory, a memfd and a
// file, and every rejection of the header, the manifest's sections and the
// manifest's rules (fd objects' too), each with its errno.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <span>
#include <utility>

#include "cxlpool/ckpt/image_header.hpp"
#include "cxlpool/ckpt/image_reader.hpp"
#include "cxlpool/ckpt/image_writer.hpp"
#include "cxlpool/ckpt/manifest_codec.hpp"
#include "cxlpool/ckpt/manifest_validate.hpp"
#include "cxlpool/common/crc32c.hpp"
#include "support/ckpt_sample_manifest.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::ckpt {
namespace {

using test::sample_manifest;
using test::without_client;

std::vector<std::byte> page_data(std::size_t pages) {
  std::vector<std::byte> data(pages * kPageSize);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte{static_cast<uint8_t>(i * 7 + i / kPageSize)};
  return data;
}

// The whole image of sample_manifest() (4 pages of data) in memory.
std::vector<std::byte> sample_image(const Manifest& m = sample_manifest()) {
  return test::image_of(m, page_data(m.image_data_bytes / kPageSize));
}

void expect_rejected(const Result<Manifest>& r, int code, const std::string& says) {
  ASSERT_FALSE(r) << "accepted; expected: " << says;
  EXPECT_EQ(r.error().code, code) << r.error().message;
  EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
}

TEST(CkptFormat, ManifestRoundTripsByteForByte) {
  const Manifest m = sample_manifest();
  ASSERT_TRUE(validate_manifest(m));
  const auto bytes = encode_manifest(m);
  auto decoded = decode_manifest(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(encode_manifest(*decoded), bytes);
  EXPECT_EQ(decoded->threads.size(), 2u);
  EXPECT_EQ(decoded->threads[1].pending.size(), 1u);
  EXPECT_EQ(decoded->threads[1].pending[0][0], 12);
  EXPECT_EQ(decoded->threads[0].name, "sample");
  EXPECT_EQ(decoded->threads[1].name, "fifteen-bytes:1");
  EXPECT_EQ(decoded->process.sigactions[9].handler, 0x401000u);
  EXPECT_EQ(decoded->process.rlimits[7][1], 4096u);
  EXPECT_EQ(decoded->files[1].path, "/tmp/data.txt");
  EXPECT_EQ(decoded->fds[1].offset, 17u);
  EXPECT_EQ(decoded->regions[0].name, "weights");
  EXPECT_EQ(decoded->regions[0].kind, RegionKind::kNamed);
  EXPECT_EQ(decoded->regions[0].offset, 4096u);
  EXPECT_EQ(decoded->regions[1].length, 0u);
  EXPECT_EQ(decoded->fds[3].kind, FdKind::kCxlpoolRegion);
  EXPECT_EQ(decoded->cxlpool_socket, "/run/cxlpool/cxlpool.sock");
  EXPECT_EQ(decoded->process.creds.groups, (std::vector<uint32_t>{1000, 27}));
  EXPECT_EQ(decoded->process.mm.auxv, m.process.mm.auxv);
  EXPECT_EQ(decoded->hot_pages, m.hot_pages);
}

TEST(CkptFormat, ImageRoundTripsInMemory) {
  auto m = decode_image(sample_image());
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(encode_manifest(*m), encode_manifest(sample_manifest()));
}

void write_sample(ImageWriter& w, Manifest& m) {
  const auto data = page_data(4);
  auto first = w.append(std::span(data).first(kPageSize));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, 4096u);
  auto rest = w.append(std::span(data).subspan(kPageSize));
  ASSERT_TRUE(rest);
  EXPECT_EQ(*rest, 8192u);
  ASSERT_TRUE(w.finish(m));
}

void check_read_back(const ImageReader& r) {
  EXPECT_EQ(encode_manifest(r.manifest()), encode_manifest(sample_manifest()));
  const auto data = page_data(4);
  const PageRun& run = r.manifest().runs[1];
  std::vector<std::byte> out(run.pages * kPageSize);
  ASSERT_TRUE(r.read_run(run, out));
  EXPECT_EQ(std::memcmp(out.data(), data.data() + (run.image_offset - 4096), out.size()), 0);
}

TEST(CkptFormat, MemfdImageRoundTripsAndIsSealed) {
  auto w = ImageWriter::to_memfd("ckpt-test");
  ASSERT_TRUE(w) << w.error().message;
  Manifest m = sample_manifest();
  m.image_data_offset = m.image_data_bytes = 0;  // finish() fills them
  write_sample(*w, m);
  EXPECT_EQ(m.image_data_offset, 4096u);
  EXPECT_EQ(m.image_data_bytes, 4 * 4096u);
  EXPECT_FALSE(w->append(page_data(1))) << "appended after finish";
  UniqueFd fd = w->release_fd();
  EXPECT_NE(::ftruncate(fd.get(), 1), 0) << "a finished memfd image can shrink";
  auto r = ImageReader::from_fd(std::move(fd));
  ASSERT_TRUE(r) << r.error().message;
  check_read_back(*r);
}

TEST(CkptFormat, FileImageRoundTripsAndDiscardRemovesIt) {
  test::TempDir dir;
  const std::string path = (dir.path() / "image").string();
  {
    auto w = ImageWriter::to_file(path);
    ASSERT_TRUE(w) << w.error().message;
    Manifest m = sample_manifest();
    write_sample(*w, m);
  }
  auto r = ImageReader::open(path);
  ASSERT_TRUE(r) << r.error().message;
  check_read_back(*r);
  auto again = ImageWriter::to_file(path);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, EEXIST);
  const std::string other = (dir.path() / "half").string();
  auto half = ImageWriter::to_file(other);
  ASSERT_TRUE(half);
  ASSERT_TRUE(half->append(page_data(2)));
  half->discard();
  EXPECT_NE(::access(other.c_str(), F_OK), 0);
}

TEST(CkptFormat, WriterRefusesPartialPages) {
  auto w = ImageWriter::to_memfd("ckpt-test");
  ASSERT_TRUE(w);
  std::vector<std::byte> odd(100);
  auto r = w->append(odd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_FALSE(w->reserve(5));
  auto at = w->reserve(2 * kPageSize);
  ASSERT_TRUE(at);
  EXPECT_EQ(*at, 4096u);
  EXPECT_EQ(w->data_bytes(), 2 * kPageSize);
}

// ---- header ----

void put_u64(std::vector<std::byte>& image, std::size_t at, uint64_t v, int n = 8) {
  for (int i = 0; i < n; ++i) image[at + i] = std::byte{static_cast<uint8_t>(v >> (8 * i))};
}

// Rewrites the header's checksum after a test changed a field.
void reseal(std::vector<std::byte>& image) { put_u64(image, 56, crc32c(std::span(image).first(56)), 4); }

struct HeaderCase {
  const char* name;
  std::function<void(std::vector<std::byte>&)> change;
  int code;
  const char* says;
};

TEST(CkptFormat, HeaderRejections) {
  const HeaderCase cases[] = {
      {"magic", [](auto& i) { i[0] = std::byte{'X'}; }, EBADMSG, "magic"},
      {"version", [](auto& i) { put_u64(i, 8, 1, 4), reseal(i); }, ENOTSUP, "version 1"},
      {"header crc", [](auto& i) { i[20] ^= std::byte{1}; }, EBADMSG, "header checksum"},
      {"header length", [](auto& i) { put_u64(i, 12, 512, 4), reseal(i); }, EBADMSG, "header length"},
      {"flags", [](auto& i) { put_u64(i, 52, 1, 4), reseal(i); }, EBADMSG, "flags"},
      {"reserved", [](auto& i) { i[4000] = std::byte{1}; }, EBADMSG, "reserved"},
      {"manifest empty", [](auto& i) { put_u64(i, 24, 0), reseal(i); }, EBADMSG, "manifest length"},
      {"manifest huge", [](auto& i) { put_u64(i, 24, kMaxManifestBytes + 1), reseal(i); }, EBADMSG, "manifest length"},
      {"manifest past end", [](auto& i) { put_u64(i, 16, i.size()), reseal(i); }, EBADMSG, "outside the file"},
      {"manifest in header", [](auto& i) { put_u64(i, 16, 100), reseal(i); }, EBADMSG, "outside the file"},
      {"manifest wraps", [](auto& i) { put_u64(i, 16, ~0ull - 10), reseal(i); }, EBADMSG, "outside the file"},
      {"data unaligned", [](auto& i) { put_u64(i, 32, 4097), reseal(i); }, EBADMSG, "not page aligned"},
      {"data length unaligned", [](auto& i) { put_u64(i, 40, 100), reseal(i); }, EBADMSG, "not page aligned"},
      {"data past end", [](auto& i) { put_u64(i, 40, 1ull << 40), reseal(i); }, EBADMSG, "outside the file"},
      {"data wraps", [](auto& i) { put_u64(i, 40, ~0ull - 4095), reseal(i); }, EBADMSG, "outside the file"},
      {"data in header", [](auto& i) { put_u64(i, 32, 0), reseal(i); }, EBADMSG, "outside the file"},
      {"overlap", [](auto& i) { put_u64(i, 40, 5 * 4096), reseal(i); }, EBADMSG, "overlaps"},
      {"manifest crc", [](auto& i) { i.back() ^= std::byte{0x80}; }, EBADMSG, "manifest checksum"},
      {"short", [](auto& i) { i.resize(4000); }, EBADMSG, "shorter"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto image = sample_image();
    c.change(image);
    expect_rejected(decode_image(image), c.code, c.says);
  }
}

TEST(CkptFormat, HeaderAndManifestMustAgreeOnTheDataArea) {
  Manifest m = sample_manifest();
  m.image_data_bytes = 8 * 4096;  // runs still inside; the header says 4 pages
  auto image = sample_image(sample_manifest());
  const auto manifest = encode_manifest(m);
  image.resize(4096 + 4 * 4096);
  image.insert(image.end(), manifest.begin(), manifest.end());
  put_u64(image, 24, manifest.size());
  put_u64(image, 48, crc32c(manifest), 4);
  reseal(image);
  expect_rejected(decode_image(image), EBADMSG, "disagree");
}

TEST(CkptFormat, ReaderRefusesShortFilesAndDirectories) {
  test::TempDir dir;
  const std::string path = (dir.path() / "short").string();
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "CXLCKPT", 8), 8);
  ::close(fd);
  auto r = ImageReader::open(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EBADMSG);
  auto d = ImageReader::open(dir.path().string());
  ASSERT_FALSE(d);
  auto missing = ImageReader::open((dir.path() / "none").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ENOENT);
}

// ---- sections ----

using Sections = std::vector<std::pair<uint32_t, std::vector<std::byte>>>;

Sections split(const std::vector<std::byte>& bytes) {
  Sections out;
  std::size_t at = 0;
  auto u32 = [&](std::size_t p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(std::to_integer<uint8_t>(bytes[p + i])) << (8 * i);
    return v;
  };
  while (at < bytes.size()) {
    const uint32_t type = u32(at), length = u32(at + 4);
    out.emplace_back(type, std::vector<std::byte>(bytes.begin() + at + 8, bytes.begin() + at + 8 + length));
    at += 8 + length;
  }
  return out;
}

std::vector<std::byte> join(const Sections& sections) {
  std::vector<std::byte> out;
  for (const auto& [type, payload] : sections) {
    for (uint32_t v : {type, static_cast<uint32_t>(payload.size())}) {
      for (int i = 0; i < 4; ++i) out.push_back(std::byte{static_cast<uint8_t>(v >> (8 * i))});
    }
    out.insert(out.end(), payload.begin(), payload.end());
  }
  return out;
}

std::vector<std::byte>& payload_of(Sections& s, SectionType type) {
  for (auto& [t, p] : s) {
    if (t == static_cast<uint32_t>(type)) return p;
  }
  throw std::runtime_error("no such section");
}

TEST(CkptFormat, SectionRejections) {
  const auto good = encode_manifest(sample_manifest());
  {
    auto bytes = good;
    bytes.resize(bytes.size() - 3);
    expect_rejected(decode_manifest(bytes), EBADMSG, "past the end");
  }
  {
    auto bytes = good;
    bytes.resize(6);
    expect_rejected(decode_manifest(bytes), EBADMSG, "past the end");
  }
  expect_rejected(decode_manifest({}), EBADMSG, "no info section");
  for (SectionType required : {SectionType::kInfo, SectionType::kProcess, SectionType::kCredentials, SectionType::kMm,
                               SectionType::kThread, SectionType::kVmas, SectionType::kRuns, SectionType::kFiles,
                               SectionType::kFds}) {
    Sections s = split(good);
    std::erase_if(s, [&](const auto& e) { return e.first == static_cast<uint32_t>(required); });
    auto r = decode_manifest(join(s));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, EBADMSG);
    EXPECT_NE(r.error().message.find("no "), std::string::npos) << r.error().message;
  }
  {
    Sections s = split(good);
    s.push_back(s[1]);
    expect_rejected(decode_manifest(join(s)), EBADMSG, "duplicate process");
  }
  {
    Sections s = split(good);
    payload_of(s, SectionType::kVmas).push_back(std::byte{0});
    expect_rejected(decode_manifest(join(s)), EBADMSG, "vmas section has trailing bytes");
  }
  {
    Sections s = split(good);
    payload_of(s, SectionType::kRuns).pop_back();
    expect_rejected(decode_manifest(join(s)), EBADMSG, "runs section is truncated");
  }
  {
    // A count far larger than the section could hold is refused before any
    // allocation.
    Sections s = split(good);
    auto& runs = payload_of(s, SectionType::kRuns);
    runs[0] = runs[1] = runs[2] = runs[3] = std::byte{0xff};
    expect_rejected(decode_manifest(join(s)), EBADMSG, "runs section is truncated");
  }
  {
    // A string longer than kMaxStringBytes.
    Sections s = split(good);
    auto& info = payload_of(s, SectionType::kInfo);
    info[12] = std::byte{0xff};
    info[13] = std::byte{0xff};
    expect_rejected(decode_manifest(join(s)), EBADMSG, "info section is truncated");
  }
  {
    Sections s = split(good);
    auto& thread = payload_of(s, SectionType::kThread);
    thread[4] = std::byte{27 * 8 + 8};  // regs blob longer than a user_regs_struct
    expect_rejected(decode_manifest(join(s)), EBADMSG, "thread section is truncated");
  }
  {
    Sections s = split(good);
    s.emplace_back(77u, std::vector<std::byte>(5));  // unknown, may be skipped
    auto r = decode_manifest(join(s));
    ASSERT_TRUE(r) << r.error().message;
    s.emplace_back(77u | kSectionMustUnderstand, std::vector<std::byte>(5));
    expect_rejected(decode_manifest(join(s)), ENOTSUP, "must be understood");
  }
  {
    Manifest m = sample_manifest();
    m.version = kFormatVersion + 1;
    expect_rejected(decode_manifest(encode_manifest(m)), ENOTSUP,
                    "format version " + std::to_string(kFormatVersion + 1));
  }
  {
    // A version 1 manifest: its thread records end before the name. The
    // version is what is wrong, not the thread sections' length.
    Manifest m = sample_manifest();
    m.version = 1;
    for (ThreadState& t : m.threads) t.name.clear();
    Sections s = split(encode_manifest(m));
    for (auto& [type, payload] : s) {
      if (type == static_cast<uint32_t>(SectionType::kThread)) payload.resize(payload.size() - 4);
    }
    expect_rejected(decode_manifest(join(s)), ENOTSUP, "format version 1");
  }
  {
    // Optional sections may be absent.
    Sections s = split(encode_manifest(without_client(sample_manifest())));
    std::erase_if(s, [](const auto& e) {
      return e.first == static_cast<uint32_t>(SectionType::kRegions) ||
             e.first == static_cast<uint32_t>(SectionType::kClient) ||
             e.first == static_cast<uint32_t>(SectionType::kHotPages) ||
             e.first == static_cast<uint32_t>(SectionType::kSharedPending);
    });
    auto r = decode_manifest(join(s));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->regions.empty());
    EXPECT_TRUE(r->hot_pages.empty());
  }
  {
    // An image from before the client section: its regions decode, of
    // unknown kind (a restore refuses them), with no socket.
    Sections s = split(good);
    std::erase_if(s, [](const auto& e) { return e.first == static_cast<uint32_t>(SectionType::kClient); });
    auto r = decode_manifest(join(s));
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->regions.size(), 2u);
    EXPECT_EQ(r->regions[0].kind, RegionKind::kUnknown);
    EXPECT_EQ(r->regions[0].offset, 0u);
    EXPECT_TRUE(r->cxlpool_socket.empty());
  }
}

TEST(CkptFormat, ClientSectionIsChecked) {
  Manifest m = sample_manifest();
  m.regions[1].kind = static_cast<RegionKind>(9);
  expect_rejected(decode_manifest(encode_manifest(m)), EBADMSG, "unknown kind");
  m = sample_manifest();
  m.fds.back().file = 2;
  expect_rejected(decode_manifest(encode_manifest(m)), EBADMSG, "fd 5: region index out of range");
  m = sample_manifest();
  m.regions[0].offset = 100;
  expect_rejected(decode_manifest(encode_manifest(m)), EBADMSG, "region weights");
  // The client section's list must match the regions section's.
  Sections s = split(encode_manifest(sample_manifest()));
  for (auto& [type, payload] : s) {
    if (type != static_cast<uint32_t>(SectionType::kRegions)) continue;
    Manifest one = sample_manifest();
    one.regions.pop_back();
    one.fds.pop_back();
    for (auto& [t2, p2] : split(encode_manifest(one))) {
      if (t2 == type) payload = p2;
    }
  }
  expect_rejected(decode_manifest(join(s)), EBADMSG, "the client section lists 2 regions");
}

// ---- rules ----

struct RuleCase {
  const char* name;
  std::function<void(Manifest&)> change;
  const char* says;
};

// Each case's change to `base` breaks the rule it names: validate_manifest
// and the decoder both refuse it, saying so.
void expect_rules(const Manifest& base, std::span<const RuleCase> cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Manifest m = base;
    c.change(m);
    auto v = validate_manifest(m);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error().code, EBADMSG);
    EXPECT_NE(v.error().message.find(c.says), std::string::npos) << v.error().message;
    // The decoder holds a manifest to the same rules.
    expect_rejected(decode_manifest(encode_manifest(m)), EBADMSG, c.says);
  }
}

TEST(CkptFormat, RuleRejections) {
  const RuleCase cases[] = {
      {"pid", [](Manifest& m) { m.process.pid = 0; }, "not positive"},
      {"no threads", [](Manifest& m) { m.threads.clear(); }, "no thread"},
      {"leader", [](Manifest& m) { std::swap(m.threads[0], m.threads[1]); }, "leader"},
      {"tid", [](Manifest& m) { m.threads[1].tid = -3; }, "tid is not positive"},
      {"dup tid", [](Manifest& m) { m.threads.push_back(m.threads[1]); }, "one tid"},
      {"regs", [](Manifest& m) { m.threads[1].regs.resize(100); }, "user_regs_struct"},
      {"xsave small", [](Manifest& m) { m.threads[0].xsave.resize(100); }, "xsave area"},
      {"rseq", [](Manifest& m) { m.threads[0].rseq.len = 0; }, "rseq"},
      {"rseq len", [](Manifest& m) { m.threads[0].rseq.len = 8192; }, "rseq"},
      {"thread name long", [](Manifest& m) { m.threads[1].name = "sixteen-bytes-xx"; }, "a name of more than 15"},
      {"thread name nul", [](Manifest& m) { m.threads[1].name = std::string("a\0b", 3); }, "with a NUL"},
      {"vma unaligned", [](Manifest& m) { m.vmas[1].end += 1; }, "not page aligned or empty"},
      {"vma empty", [](Manifest& m) { m.vmas[1].end = m.vmas[1].start; }, "not page aligned or empty"},
      {"vma order", [](Manifest& m) { std::swap(m.vmas[0], m.vmas[1]); }, "not sorted"},
      {"vma overlap", [](Manifest& m) { m.vmas[1].start = 0x401000; }, "overlaps"},
      {"vma kind", [](Manifest& m) { m.vmas[1].kind = static_cast<VmaKind>(10); }, "unknown kind"},
      {"vma kind zero", [](Manifest& m) { m.vmas[1].kind = static_cast<VmaKind>(0); }, "unknown kind"},
      {"vma file", [](Manifest& m) { m.vmas[0].file = 2; }, "file index"},
      {"anon with file", [](Manifest& m) { m.vmas[1].file = 0; }, "file index"},
      {"vma file offset", [](Manifest& m) { m.vmas[0].file_offset = 12; }, "file offset"},
      {"data area", [](Manifest& m) { m.image_data_offset = 100; }, "page data area"},
      {"run empty", [](Manifest& m) { m.runs[0].pages = 0; }, "empty"},
      {"run unaligned", [](Manifest& m) { m.runs[0].addr += 8; }, "unaligned"},
      {"run wraps", [](Manifest& m) { m.runs[2].pages = ~0ull / 2; }, "past 2^64"},
      {"run order", [](Manifest& m) { std::swap(m.runs[0], m.runs[1]); }, "not sorted"},
      {"run outside vma", [](Manifest& m) { m.runs[1].pages = 5; }, "not inside one vma"},
      {"run before vmas", [](Manifest& m) { m.runs[0].addr = 0x1000; }, "not inside one vma"},
      {"run in vdso",
       [](Manifest& m) {
         m.runs[2] = {0x7f0000010000ull, 1, 16384};
         m.hot_pages.pop_back();
       },
       "not stored"},
      {"run image offset", [](Manifest& m) { m.runs[0].image_offset = 0; }, "outside the page data"},
      {"run image end", [](Manifest& m) { m.runs[2].image_offset = 5 * 4096; }, "outside the page data"},
      {"run image unaligned", [](Manifest& m) { m.runs[2].image_offset += 1; }, "unaligned"},
      {"file path", [](Manifest& m) { m.files[1].path = "relative"; }, "not absolute"},
      {"file nul", [](Manifest& m) { m.files[1].path = std::string("/a\0b", 4); }, "not absolute"},
      {"cwd", [](Manifest& m) { m.process.cwd = "tmp"; }, "cwd"},
      {"exe", [](Manifest& m) { m.process.mm.exe_file = 5; }, "exe file"},
      {"auxv", [](Manifest& m) { m.process.mm.auxv.push_back(1); }, "auxv"},
      {"umask", [](Manifest& m) { m.process.umask = 01000; }, "umask"},
      {"fd order", [](Manifest& m) { std::swap(m.fds[0], m.fds[1]); }, "not sorted"},
      {"fd repeat", [](Manifest& m) { m.fds[1].fd = 0; }, "not sorted or repeated"},
      {"fd negative", [](Manifest& m) { m.fds[0].fd = -1; }, "not sorted"},
      {"fd file", [](Manifest& m) { m.fds[1].file = 7; }, "file index"},
      {"stdio high", [](Manifest& m) { m.fds[1] = {3, FdKind::kStdio, kNoFile, 0, 0}; }, "stdio"},
      {"socket file", [](Manifest& m) { m.fds[1] = {3, FdKind::kCxlpoolSocket, 1, 0, 0}; }, "without a file"},
      {"fd kind", [](Manifest& m) { m.fds[1].kind = static_cast<FdKind>(42); }, "unknown kind"},
      {"region", [](Manifest& m) { m.regions[0].length = 100; }, "region weights"},
      {"region wraps", [](Manifest& m) { m.regions[0].addr = ~0ull - 4095; }, "past 2^64"},
      {"hot order", [](Manifest& m) { std::swap(m.hot_pages[0], m.hot_pages[1]); }, "sorted"},
      {"hot repeat", [](Manifest& m) { m.hot_pages[1] = m.hot_pages[0]; }, "sorted"},
      {"hot outside", [](Manifest& m) { m.hot_pages[1] = 0x7f0000003000ull; }, "not in any run"},
  };
  expect_rules(sample_manifest(), cases);
}

// ---- shared anonymous memory ----

TEST(CkptSharedAnon, RoundTripKeepsObjectIdsAndOffsets) {
  const Manifest m = test::sample_manifest_with_shared_anon();
  ASSERT_TRUE(validate_manifest(m)) << validate_manifest(m).error().message;
  const auto bytes = encode_manifest(m);
  auto decoded = decode_manifest(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(encode_manifest(*decoded), bytes);
  const Vma& split = decoded->vmas[decoded->vmas.size() - 3];
  EXPECT_EQ(split.kind, VmaKind::kSharedAnon);
  EXPECT_EQ(split.file, 0u);
  EXPECT_EQ(split.file_offset, 0x2000u);
  EXPECT_EQ(decoded->vmas.back().file, 1u);
  EXPECT_EQ(decoded->runs.back().addr, 0x7f0000020000ull);
}

TEST(CkptSharedAnon, RuleRejections) {
  auto last = [](Manifest& m) -> Vma& { return m.vmas.back(); };
  const RuleCase cases[] = {
      {"id skips one", [=](Manifest& m) { last(m).file = 2; }, "shared object id out of order"},
      {"no id", [=](Manifest& m) { last(m).file = kNoFile; }, "shared object id out of order"},
      {"first id not 0", [](Manifest& m) { m.vmas[m.vmas.size() - 4].file = 1; }, "shared object id out of order"},
      {"offset unaligned", [=](Manifest& m) { last(m).file_offset = 12; }, "not page aligned"},
      {"offset past the object limit", [=](Manifest& m) { last(m).file_offset = kMaxSharedObjectBytes; },
       "past the largest object"},
      {"offset wraps", [=](Manifest& m) { last(m).file_offset = ~0ull - 4095; }, "past the largest object"},
  };
  expect_rules(test::sample_manifest_with_shared_anon(), cases);
}

// ---- fd objects: eventfds, pipes, socketpairs ----

Manifest with_objects() { return test::sample_manifest_with_fd_objects(); }

TEST(CkptFdObjects, RoundTrip) {
  const Manifest m = with_objects();
  ASSERT_TRUE(validate_manifest(m)) << validate_manifest(m).error().message;
  const auto bytes = encode_manifest(m);
  auto decoded = decode_manifest(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(encode_manifest(*decoded), bytes);
  ASSERT_EQ(decoded->fd_objects.size(), 9u);
  EXPECT_EQ(decoded->fd_objects[0].counter, 5u);
  EXPECT_EQ(decoded->fd_objects[0].detail, kEventfdSemaphore);
  EXPECT_EQ(decoded->fd_objects[1].contents, (std::vector<uint8_t>{'a', 'b', 'c'}));
  EXPECT_EQ(decoded->fd_objects[3].peer, 1002u);
  EXPECT_EQ(decoded->fds[5].kind, FdKind::kPipe);
  // The abstract name's NULs (leading, trailing) survive.
  const FdObject& listener = decoded->fd_objects[6];
  ASSERT_EQ(listener.contents.size(), 28u);
  EXPECT_EQ(listener.contents.front(), 0);
  EXPECT_EQ(listener.contents.back(), 0);
  EXPECT_EQ(listener.detail, 5u);
  EXPECT_EQ(listener.counter, 128u);
  EXPECT_EQ(decoded->fds.back().kind, FdKind::kUnixListener);
  EXPECT_EQ(decoded->fd_objects[8].contents, (std::vector<uint8_t>{'/', 'r', 'u', 'n', '/', 's', 'a', 'm', 'p', 'l',
                                                                   'e', '.', 's', 'o', 'c', 'k'}));
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

TEST(CkptFdObjects, RuleRejections) {
  const RuleCase cases[] = {
      {"object for a file", [](Manifest& m) { m.fd_objects[0].fd = 3; }, "no fd object record"},
      {"extra object", [](Manifest& m) { m.fd_objects.push_back(m.fd_objects.back()); }, "for an fd that has none"},
      {"object order", [](Manifest& m) { std::swap(m.fd_objects[0], m.fd_objects[1]); }, "no fd object record"},
      {"eventfd file", [](Manifest& m) { m.fds[4].file = 0; }, "without a file"},
      {"eventfd flags", [](Manifest& m) { m.fd_objects[0].detail = 6; }, "eventfd flags"},
      {"eventfd counter", [](Manifest& m) { m.fd_objects[0].counter = ~0ull; }, "eventfd flags"},
      {"eventfd contents", [](Manifest& m) { m.fd_objects[0].contents = {1}; }, "eventfd flags"},
      {"dup disagrees", [](Manifest& m) { m.fd_objects[5].counter = 6; }, "disagrees"},
      {"pipe access", [](Manifest& m) { m.fds[5].open_flags = O_RDWR; }, "read-only or write-only"},
      {"pipe capacity", [](Manifest& m) { m.fd_objects[1].detail = 5000; }, "capacity"},
      {"pipe capacity small", [](Manifest& m) { m.fd_objects[1].detail = 2048; }, "capacity"},
      {"pipe overfull",
       [](Manifest& m) {
         m.fd_objects[1].detail = m.fd_objects[2].detail = 4096;
         m.fd_objects[1].contents.assign(4097, 'x');
       },
       "more pipe contents"},
      {"contents on the second fd", [](Manifest& m) { m.fd_objects[2].contents = {'z'}; }, "first fd"},
      {"pipe without writer", [](Manifest& m) { m.fds[6].open_flags = O_RDONLY; }, "both a read and a write end"},
      {"pipe without reader", [](Manifest& m) { m.fds[5].open_flags = O_WRONLY; }, "both a read and a write end"},
      {"socket type", [](Manifest& m) { m.fd_objects[3].detail = m.fd_objects[4].detail = 3; }, "socketpair type"},
      {"socket own peer", [](Manifest& m) { m.fd_objects[3].peer = 1001; }, "socketpair type"},
      {"socket lone", [](Manifest& m) { m.fd_objects[4].peer = 77; }, "without its peer"},
      {"socket peer type",
       [](Manifest& m) { m.fd_objects[4].detail = 2; },
       "without its peer"},
      {"listener dgram", [](Manifest& m) { m.fd_objects[8].detail = 2; }, "not stream or seqpacket"},
      {"listener peer", [](Manifest& m) { m.fd_objects[8].peer = 7; }, "not stream or seqpacket"},
      {"listener backlog", [](Manifest& m) { m.fd_objects[8].counter = kMaxListenBacklog + 1; }, "backlog"},
      {"listener no address", [](Manifest& m) { m.fd_objects[8].contents.clear(); }, "neither an abstract"},
      {"listener bare NUL", [](Manifest& m) { m.fd_objects[8].contents = {0}; }, "neither an abstract"},
      {"listener address too long",
       [](Manifest& m) {
         m.fd_objects[8].contents.assign(kMaxUnixAddressBytes + 1, 'a');
         m.fd_objects[8].contents[0] = '/';
       },
       "neither an abstract"},
      {"listener relative path",
       [](Manifest& m) { m.fd_objects[8].contents = {'r', 'u', 'n'}; },
       "neither an abstract"},
      {"listener path with NUL",
       [](Manifest& m) { m.fd_objects[8].contents = {'/', 'a', 0, 'b'}; },
       "neither an abstract"},
      {"listener file", [](Manifest& m) { m.fds.back().file = 0; }, "without a file"},
      {"listener dup address",
       [](Manifest& m) { m.fd_objects[7].contents.back() = 'x'; },
       "disagrees"},
      {"listener dup backlog", [](Manifest& m) { m.fd_objects[7].counter = 5; }, "disagrees"},
  };
  expect_rules(with_objects(), cases);
}

// ---- leased regions ----

TEST(CkptLeases, RoundTrip) {
  const Manifest m = test::sample_manifest_with_lease();
  ASSERT_TRUE(validate_manifest(m)) << validate_manifest(m).error().message;
  const auto bytes = encode_manifest(m);
  auto decoded = decode_manifest(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(encode_manifest(*decoded), bytes);
  ASSERT_EQ(decoded->leases.size(), 1u);
  const Lease& l = decoded->leases[0];
  EXPECT_EQ(l.region_id, 21u);
  EXPECT_EQ(l.size, 0x8000u);
  EXPECT_EQ(l.tier_id, 1u);
  ASSERT_EQ(l.runs.size(), 2u);
  EXPECT_EQ(l.runs[1].offset, 0x3000u);
  EXPECT_EQ(l.runs[1].pages, 2u);
  EXPECT_EQ(l.runs[1].image_offset, 6u * 4096);
  EXPECT_EQ(decoded->regions[2].kind, RegionKind::kLeased);
  EXPECT_TRUE(decoded->regions[2].writable);
}

TEST(CkptLeases, WithoutLeasesTheEncodingHasNoSuchSection) {
  const auto plain = encode_manifest(sample_manifest());
  Manifest with = test::sample_manifest_with_lease();
  // The leases section alone tells the two encodings apart besides the
  // regions themselves: dropping the leased regions and the lease gives
  // back the plain bytes but for the data area's length.
  with.regions.resize(2);
  with.fds.pop_back();
  with.leases.clear();
  with.image_data_bytes = sample_manifest().image_data_bytes;
  EXPECT_EQ(encode_manifest(with), plain);
}

TEST(CkptLeases, LeasedRegionsWithoutTheSectionAreRefused) {
  Manifest m = test::sample_manifest_with_lease();
  m.leases.clear();
  expect_rejected(decode_manifest(encode_manifest(m)), EBADMSG, "leased region 21: no lease record");
}

TEST(CkptLeases, RuleRejections) {
  const RuleCase cases[] = {
      {"stray lease", [](Manifest& m) { m.leases.push_back({99, 4096, 0, {}}); }, "no leased region names"},
      {"repeated lease", [](Manifest& m) { m.leases.push_back(m.leases[0]); }, "sorted and unique"},
      {"lease id 0", [](Manifest& m) { m.leases.insert(m.leases.begin(), Lease{0, 4096, 0, {}}); },
       "sorted and unique"},
      {"lease of a named region", [](Manifest& m) { m.leases.insert(m.leases.begin(), Lease{7, 4096, 0, {}}); },
       "a lease of a region not leased"},
      {"size zero", [](Manifest& m) { m.leases[0].size = 0; }, "is empty, unaligned or past 2^47"},
      {"size unaligned", [](Manifest& m) { m.leases[0].size = 0x8001; }, "is empty, unaligned or past 2^47"},
      {"size huge", [](Manifest& m) { m.leases[0].size = kMaxLeaseBytes + 4096; }, "past 2^47"},
      {"run empty", [](Manifest& m) { m.leases[0].runs[0].pages = 0; }, "past the region's end"},
      {"run unaligned", [](Manifest& m) { m.leases[0].runs[0].offset = 100; }, "past the region's end"},
      {"run past the end", [](Manifest& m) { m.leases[0].runs[1].offset = 0x7000; }, "past the region's end"},
      {"run wraps", [](Manifest& m) { m.leases[0].runs[1].pages = ~0ull / 4096; }, "past the region's end"},
      {"runs overlap", [](Manifest& m) { m.leases[0].runs[1].offset = 0; }, "overlaps the one before"},
      {"run outside the data", [](Manifest& m) { m.leases[0].runs[1].image_offset += 4096; },
       "outside the page data area"},
      {"run before the data", [](Manifest& m) { m.leases[0].runs[0].image_offset = 0; },
       "outside the page data area"},
      {"run unaligned in the image", [](Manifest& m) { m.leases[0].runs[0].image_offset += 1; },
       "outside the page data area"},
      {"mapping past the lease", [](Manifest& m) { m.regions[2].offset = 0x6000; }, "a mapping past the region's end"},
  };
  expect_rules(test::sample_manifest_with_lease(), cases);
}

}  // namespace
}  // namespace cxlpool::ckpt
