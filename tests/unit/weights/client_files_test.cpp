// SPDX-License-Identifier: Apache-2.0
// The daemon's checks of the descriptors a WeightsLoad carries
// (daemon/weights/weights_loader.hpp): one per path, open for reading,
// regular files, no file twice, and the region mode they allow.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "weights/weights_loader.hpp"

namespace cxlpool::daemon {
namespace {

class ClientFilesTest : public ::testing::Test {
 protected:
  // A one-tensor safetensors file with `mode`.
  std::string file(const std::string& name, mode_t mode) {
    const std::string json = R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
    bytes += json + "abcd";
    const std::string path = dir_ + "/" + name;
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    EXPECT_TRUE(fd);
    EXPECT_EQ(::write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    EXPECT_EQ(::fchmod(fd.get(), mode), 0);
    return path;
  }
  static UniqueFd open_ro(const std::string& path, int extra = 0) {
    return UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | extra));
  }
  test::TempDir scratch_{"client-files"};
  const std::string dir_ = scratch_.path().string();
};

std::vector<UniqueFd> fds_of(UniqueFd a) {
  std::vector<UniqueFd> v;
  v.push_back(std::move(a));
  return v;
}

TEST_F(ClientFilesTest, OneDescriptorPerPath) {
  const std::string a = file("a.safetensors", 0644);
  auto none = check_client_files({a}, {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, EINVAL);
  EXPECT_NE(none.error().message.find("0 descriptors for 1 files"), std::string::npos) << none.error().message;
  std::vector<UniqueFd> two;
  two.push_back(open_ro(a));
  two.push_back(open_ro(file("b.safetensors", 0644)));
  auto extra = check_client_files({a}, std::move(two));
  ASSERT_FALSE(extra);
  EXPECT_EQ(extra.error().code, EINVAL);
}

TEST_F(ClientFilesTest, DescriptorsMustBeOpenForReading) {
  const std::string a = file("a.safetensors", 0644);
  auto path_only = check_client_files({a}, fds_of(open_ro(a, O_PATH)));
  ASSERT_FALSE(path_only);
  EXPECT_EQ(path_only.error().code, EBADF);
  auto write_only = check_client_files({a}, fds_of(UniqueFd(::open(a.c_str(), O_WRONLY | O_CLOEXEC))));
  ASSERT_FALSE(write_only);
  EXPECT_EQ(write_only.error().code, EBADF);
  auto dir = check_client_files({dir_}, fds_of(open_ro(dir_, O_DIRECTORY)));
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().code, EINVAL);
  EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos);
}

TEST_F(ClientFilesTest, OneFileTwiceIsRefusedWhateverItsNames) {
  const std::string a = file("a.safetensors", 0644);
  const std::string link = dir_ + "/link.safetensors";
  ASSERT_EQ(::link(a.c_str(), link.c_str()), 0);
  std::vector<UniqueFd> fds;
  fds.push_back(open_ro(a));
  fds.push_back(open_ro(link));
  auto twice = check_client_files({a, link}, std::move(fds));
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, EINVAL);
  EXPECT_NE(twice.error().message.find(link + ": the same file as " + a), std::string::npos)
      << twice.error().message;
}

TEST_F(ClientFilesTest, ModeIsTheIntersectionOfReadBits) {
  const std::string a = file("a.safetensors", 0644);
  const std::string b = file("b.safetensors", 0640);
  const std::string c = file("c.safetensors", 0755);
  std::vector<UniqueFd> fds;
  fds.push_back(open_ro(a));
  fds.push_back(open_ro(b));
  fds.push_back(open_ro(c));
  auto files = check_client_files({a, b, c}, std::move(fds));
  ASSERT_TRUE(files) << files.error().message;
  EXPECT_EQ(files->read_mode, 0440u);
  ASSERT_EQ(files->ids.size(), 3u);
  EXPECT_NE(files->ids[0], files->ids[1]);
  auto only = check_client_files({a}, fds_of(open_ro(a)));
  ASSERT_TRUE(only);
  EXPECT_EQ(only->read_mode, 0444u);
  EXPECT_EQ(only->ids[0], files->ids[0]);
}

TEST_F(ClientFilesTest, HeadersAreReadThroughTheDescriptors) {
  const std::string a = file("a.safetensors", 0644);
  auto files = check_client_files({"/label/a"}, fds_of(open_ro(a)));
  ASSERT_TRUE(files);
  // The path is gone: the descriptor is all the daemon reads.
  ASSERT_EQ(::unlink(a.c_str()), 0);
  auto opened = read_model_files(std::move(*files), {});
  ASSERT_TRUE(opened) << opened.error().message;
  ASSERT_EQ(opened->files.size(), 1u);
  EXPECT_EQ(opened->files[0].path, "/label/a");
  EXPECT_EQ(opened->files[0].header.tensors.at(0).name, "w");
  // A malformed file is named by its label.
  const std::string bad = dir_ + "/bad.safetensors";
  {
    UniqueFd fd(::open(bad.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_EQ(::write(fd.get(), "password and secrets", 20), 20);
  }
  auto bad_files = check_client_files({"/label/bad"}, fds_of(open_ro(bad)));
  ASSERT_TRUE(bad_files);
  auto rejected = read_model_files(std::move(*bad_files), {});
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().code, EBADMSG);
  EXPECT_EQ(rejected.error().message.rfind("/label/bad: ", 0), 0u) << rejected.error().message;
  EXPECT_EQ(rejected.error().message.find("7237970109966541168"), std::string::npos) << rejected.error().message;
}

}  // namespace
}  // namespace cxlpool::daemon
