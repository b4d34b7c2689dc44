// SPDX-License-Identifier: Apache-2.0
// What --check-config and the start check against the host: emulated tiers
// the machine cannot back, and an ssd_path that is a link, not a file, or in
// a directory that does not exist; a pod secret file that is missing, not
// a regular file, not its owner's alone, of another owner, or too short;
// the etcd password file likewise; a view_dir that is not a tmpfs directory.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config.hpp"
#include "config_host_checks.hpp"
#include "kvstore/kv_view_dir.hpp"
#include "pod/pod_auth.hpp"
#include "cxlpool/common/units.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::daemon {
namespace {

class SsdPathCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    kv.ssd_path = (dir / "kv.img").string();
    kv.ssd_bytes = 4 * kMiB;
  }
  // /var/tmp: a disk file system, as an SSD tier's directory would be.
  test::TempDir scratch{"hostcheck", "/var/tmp"};
  const std::filesystem::path dir = scratch.path();
  KvStoreSection kv;
};

TEST_F(SsdPathCheck, ANewFileInAnExistingDirectoryPasses) {
  EXPECT_TRUE(check_ssd_path(kv));
  std::ofstream(kv.ssd_path) << "x";
  EXPECT_TRUE(check_ssd_path(kv)) << "an existing regular file";
  EXPECT_TRUE(check_ssd_path(KvStoreSection{})) << "no SSD tier";
}

TEST_F(SsdPathCheck, AMissingDirectoryIsAnError) {
  kv.ssd_path = (dir / "absent" / "kv.img").string();
  auto ok = check_ssd_path(kv);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, ENOENT);
  EXPECT_NE(ok.error().message.find((dir / "absent").string() + " does not exist"), std::string::npos)
      << ok.error().message;
}

TEST_F(SsdPathCheck, ASymlinkIsAnErrorEvenToARegularFile) {
  std::ofstream(dir / "target") << "x";
  std::filesystem::create_symlink(dir / "target", kv.ssd_path);
  auto ok = check_ssd_path(kv);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, ELOOP);
  EXPECT_NE(ok.error().message.find("symbolic link"), std::string::npos) << ok.error().message;
}

TEST_F(SsdPathCheck, ADirectoryOrFifoIsNotALog) {
  kv.ssd_path = dir.string();
  auto directory = check_ssd_path(kv);
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().code, EINVAL);
  EXPECT_NE(directory.error().message.find("mode 040"), std::string::npos) << "octal: " << directory.error().message;
  kv.ssd_path = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(kv.ssd_path.c_str(), 0600), 0);
  auto fifo = check_ssd_path(kv);
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().code, EINVAL);
}

TEST_F(SsdPathCheck, ANewFileNeedsItsSize) {
  kv.ssd_bytes = 0;
  auto ok = check_ssd_path(kv);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, EINVAL);
  EXPECT_NE(ok.error().message.find("kvstore.ssd_bytes is not set"), std::string::npos);
}

TEST(EmulatedCapacityCheck, ATierLargerThanMemoryAndSwapIsRefused) {
  Config config = embedded_default_config();
  config.emulated_tiers[0].capacity = 8 * kGiB;
  EXPECT_TRUE(check_emulated_capacity(config, 8 * kGiB));
  auto ok = check_emulated_capacity(config, 8 * kGiB - 1);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, EINVAL);
  EXPECT_NE(ok.error().message.find("emulated_tier 'emu-slow'"), std::string::npos) << ok.error().message;
  EXPECT_NE(ok.error().message.find("memory and swap"), std::string::npos) << ok.error().message;
  EXPECT_TRUE(check_emulated_capacity(config, 0)) << "unknown host size: nothing to compare";
  EXPECT_GT(host_memory_and_swap_bytes(), 0u);
  EXPECT_TRUE(check_config_on_host(embedded_default_config()));
}

class PodSecretCheck : public ::testing::Test {
 protected:
  void SetUp() override { pod.secret_file = (dir / "pod.key").string(); }
  // A file of `bytes` bytes with `mode`, owned by this process.
  void write(size_t bytes, mode_t mode) {
    std::ofstream(pod.secret_file) << std::string(bytes, 'k');
    ASSERT_EQ(::chmod(pod.secret_file.c_str(), mode), 0);
  }
  // The check's error, which must name the key and the path.
  Error refusal(uid_t uid = ::geteuid()) {
    auto ok = check_pod_secret(pod, uid);
    if (ok) return Error{0, "accepted"};
    EXPECT_NE(ok.error().message.find("pod.secret_file " + pod.secret_file), std::string::npos)
        << ok.error().message;
    return ok.error();
  }
  test::TempDir scratch{"podsecret"};
  const std::filesystem::path dir = scratch.path();
  PodSection pod;
};

TEST_F(PodSecretCheck, NoFileMeansNoAuthentication) {
  EXPECT_TRUE(check_pod_secret(PodSection{}, ::geteuid()));
  auto secret = load_pod_secret("", ::geteuid());
  ASSERT_TRUE(secret);
  EXPECT_TRUE(secret->empty());
}

TEST_F(PodSecretCheck, APrivateFileOfThirtyTwoBytesOrMorePasses) {
  write(32, 0600);
  EXPECT_TRUE(check_pod_secret(pod, ::geteuid()));
  write(4096, 0400);
  auto secret = load_pod_secret(pod.secret_file, ::geteuid());
  ASSERT_TRUE(secret) << secret.error().message;
  EXPECT_EQ(secret->bytes().size(), 4096u);
  EXPECT_EQ(secret->bytes()[0], std::byte{'k'});
  // A link to such a file is followed (secrets are often mounted so).
  std::filesystem::create_symlink(pod.secret_file, dir / "link.key");
  pod.secret_file = (dir / "link.key").string();
  EXPECT_TRUE(check_pod_secret(pod, ::geteuid()));
}

TEST_F(PodSecretCheck, AMissingFileIsRefused) {
  EXPECT_EQ(refusal().code, ENOENT);
  EXPECT_NE(refusal().message.find("does not exist"), std::string::npos);
}

TEST_F(PodSecretCheck, ADirectoryOrAFifoIsRefused) {
  std::filesystem::create_directory(pod.secret_file);
  EXPECT_EQ(refusal().code, EINVAL);
  EXPECT_NE(refusal().message.find("not a regular file"), std::string::npos);
  pod.secret_file = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(pod.secret_file.c_str(), 0600), 0);
  EXPECT_EQ(refusal().code, EINVAL) << "a FIFO must be refused, not read (nor waited on)";
}

TEST_F(PodSecretCheck, AnyAccessForGroupOrOthersIsRefused) {
  for (mode_t mode : {0640, 0620, 0604, 0602, 0610, 0601, 0644, 0666}) {
    write(32, mode);
    const Error e = refusal();
    EXPECT_EQ(e.code, EPERM) << std::oct << mode;
    EXPECT_NE(e.message.find("chmod 600"), std::string::npos) << e.message;
  }
}

TEST_F(PodSecretCheck, AShortOrHugeFileIsRefused) {
  write(31, 0600);
  Error e = refusal();
  EXPECT_EQ(e.code, EINVAL);
  EXPECT_NE(e.message.find("holds 31 bytes"), std::string::npos) << e.message;
  write(0, 0600);
  EXPECT_EQ(refusal().code, EINVAL);
  write(4097, 0600);
  EXPECT_EQ(refusal().code, EINVAL);
}

TEST_F(PodSecretCheck, AFileOfAnotherOwnerIsRefused) {
  write(32, 0600);
  // The daemon's uid as seen by the check: a file of this process's uid is
  // accepted for a daemon running as that uid, refused for another one
  // unless it belongs to root.
  const uid_t me = ::geteuid();
  if (me == 0) {
    EXPECT_TRUE(check_pod_secret(pod, 4242)) << "root's file is accepted whatever the daemon's uid";
    ASSERT_EQ(::chown(pod.secret_file.c_str(), 4242, 4242), 0);
    EXPECT_TRUE(check_pod_secret(pod, 4242)) << "the daemon's own file";
    const Error e = refusal(0);
    EXPECT_EQ(e.code, EPERM);
    EXPECT_NE(e.message.find("owned by uid 4242"), std::string::npos) << e.message;
    EXPECT_EQ(refusal(4343).code, EPERM);
  } else {
    const Error e = refusal(me + 1);
    EXPECT_EQ(e.code, EPERM);
    EXPECT_NE(e.message.find("owned by uid " + std::to_string(me)), std::string::npos) << e.message;
  }
}

TEST_F(PodSecretCheck, TheEtcdPasswordFileIsCheckedTheSameWay) {
  PodSection with_password;
  with_password.etcd_password_file = (dir / "etcd.pw").string();
  auto refused = [&](int code, const std::string& fragment) {
    auto ok = check_pod_secret(with_password, ::geteuid());
    ASSERT_FALSE(ok);
    EXPECT_EQ(ok.error().code, code);
    EXPECT_NE(ok.error().message.find("pod.etcd_password_file " + with_password.etcd_password_file),
              std::string::npos)
        << ok.error().message;
    EXPECT_NE(ok.error().message.find(fragment), std::string::npos) << ok.error().message;
  };
  refused(ENOENT, "does not exist");
  std::ofstream(with_password.etcd_password_file) << "pw\n";
  ASSERT_EQ(::chmod(with_password.etcd_password_file.c_str(), 0640), 0);
  refused(EPERM, "chmod 600");
  ASSERT_EQ(::chmod(with_password.etcd_password_file.c_str(), 0600), 0);
  EXPECT_TRUE(check_pod_secret(with_password, ::geteuid()));
  auto password = load_etcd_password(with_password.etcd_password_file, ::geteuid());
  ASSERT_TRUE(password);
  EXPECT_EQ(*password, "pw") << "one trailing newline is not part of it";
  std::ofstream(with_password.etcd_password_file) << "pw\n\n";
  EXPECT_EQ(*load_etcd_password(with_password.etcd_password_file, ::geteuid()), "pw\n");
  std::ofstream(with_password.etcd_password_file) << "\n";
  refused(EINVAL, "holds no password");
  std::ofstream(with_password.etcd_password_file).close();
  refused(EINVAL, "holds 0 bytes");
  EXPECT_EQ(*load_etcd_password("", ::geteuid()), "");
}

TEST_F(PodSecretCheck, TheStartRunsTheCheck) {
  Config config;
  config.pod.secret_file = pod.secret_file;
  auto ok = check_config_on_host(config);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, ENOENT);
}

struct statfs fs_of(const std::string& path) {
  struct statfs fs {};
  ::statfs(path.c_str(), &fs);
  return fs;
}

bool on_tmpfs(const std::string& path) { return static_cast<unsigned long>(fs_of(path).f_type) == TMPFS_MAGIC; }

// /dev/shm is tmpfs on every Linux this runs on, with a size limit (half
// the memory) on the machines here; /var/tmp a disk file system (each
// checked, the case skipped otherwise). A tmpfs without a limit needs a
// mount (the integration test KvStore.ViewsLiveOnTheConfiguredTmpfsWithHugePages).
TEST(ViewDirCheck, RefusesLinksFilesOtherFileSystemsSizeLimitsAndOthersDirectories) {
  if (!on_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  test::TempDir shm{"viewdir", "/dev/shm"};
  const std::string dir = shm.path().string();
  const uid_t me = ::geteuid();
  const std::string link = dir + "/link";
  ASSERT_EQ(::symlink(dir.c_str(), link.c_str()), 0);
  auto linked = check_view_dir(link, me);
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().code, ELOOP);
  const std::string file = dir + "/file";
  std::ofstream(file) << "x";
  auto not_dir = check_view_dir(file, me);
  ASSERT_FALSE(not_dir);
  EXPECT_EQ(not_dir.error().code, ENOTDIR);
  auto missing = check_view_dir(dir + "/missing", me);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("kvstore.view_dir"), std::string::npos) << missing.error().message;
  auto others = check_view_dir(dir, me + 1);
  ASSERT_FALSE(others);
  EXPECT_EQ(others.error().code, EPERM) << "another uid's directory";
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  auto open_to_all = check_view_dir(dir, me);
  ASSERT_FALSE(open_to_all);
  EXPECT_EQ(open_to_all.error().code, EPERM) << "writable by others: " << open_to_all.error().message;
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  if (fs_of(dir).f_blocks != 0) {
    auto limited = check_view_dir(dir, me);
    ASSERT_FALSE(limited);
    EXPECT_EQ(limited.error().code, EINVAL);
    EXPECT_NE(limited.error().message.find("size=0"), std::string::npos) << limited.error().message;
  }

  test::TempDir disk{"viewdir", "/var/tmp"};
  if (on_tmpfs(disk.path())) GTEST_SKIP() << "/var/tmp is tmpfs here";
  auto refused = check_view_dir(disk.path(), me);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, EINVAL);
  EXPECT_NE(refused.error().message.find("is not on tmpfs"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("huge=within_size"), std::string::npos) << "says what to mount";
}

// The page size the log reports: the huge= of the mount of the directory's
// device (a bind mount elsewhere tells the same), unless shmem_enabled
// overrides every mount.
TEST(ViewDirCheck, HugePagesComeFromTheMountOfTheDirectorysDevice) {
  test::TempDir dir{"viewdir"};
  struct stat st {};
  ASSERT_EQ(::stat(dir.path().c_str(), &st), 0);
  const std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  const std::string tmpfs = "36 25 0:99 / /elsewhere rw - tmpfs other rw\n"
                            "40 25 " + dev + " / /some/where rw,relatime shared:9 - tmpfs kv rw,size=0k,huge=within_size\n";
  const std::string never = "40 25 " + dev + " / /x rw - tmpfs kv rw,mode=700\n";
  const std::string disk = "40 25 " + dev + " / /x rw - ext4 /dev/vda rw\n";
  EXPECT_EQ(view_dir_huge_pages(dir.path(), tmpfs, "always within_size advise [never] deny force"), "within_size");
  EXPECT_EQ(view_dir_huge_pages(dir.path(), never, "[never]"), "never");
  EXPECT_EQ(view_dir_huge_pages(dir.path(), disk, "[never]"), "") << "not a tmpfs";
  EXPECT_EQ(view_dir_huge_pages(dir.path(), "", ""), "") << "no mount of its device";
  EXPECT_EQ(view_dir_huge_pages(dir.path(), tmpfs, "always within_size advise never [deny] force"), "deny");
  EXPECT_EQ(view_dir_huge_pages(dir.path(), never, "always within_size advise never deny [force]"), "force");
  EXPECT_TRUE(huge_pages_in_views("within_size"));
  EXPECT_TRUE(huge_pages_in_views("force"));
  EXPECT_FALSE(huge_pages_in_views("never"));
  EXPECT_FALSE(huge_pages_in_views("deny"));
  EXPECT_FALSE(huge_pages_in_views("advise")) << "the views' mappings are not madvised";
}

// The views' files: unnamed for good (O_EXCL: linkat cannot name them), the
// size asked, 0400 (nobody else reopens them).
TEST(ViewDirCheck, ViewFilesCannotBeNamedAndAreOwnerReadOnly) {
  test::TempDir shm{"viewdir", "/dev/shm"};
  const std::string dir = shm.path().string();
  UniqueFd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir_fd);
  auto fd = create_view_file(dir_fd.get(), dir, "view", 8 * kMiB);
  ASSERT_TRUE(fd) << fd.error().message;
  struct stat st {};
  ASSERT_EQ(::fstat(fd->get(), &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(8 * kMiB));
  EXPECT_EQ(st.st_mode & 07777, 0400u);
  EXPECT_EQ(st.st_nlink, 0u) << "O_TMPFILE: no name in the directory";
  const std::string proc = "/proc/self/fd/" + std::to_string(fd->get());
  EXPECT_NE(::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, (dir + "/named").c_str(), AT_SYMLINK_FOLLOW), 0);
  EXPECT_TRUE(std::filesystem::is_empty(shm.path()));
  auto refused = create_view_file(-1, dir, "view", kMiB);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("kvstore.view_dir"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace cxlpool::daemon
