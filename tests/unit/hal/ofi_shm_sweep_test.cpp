// SPDX-License-Identifier: Apache-2.0
// The sweep of shm endpoint regions that killed processes left: only files
// named after a shm endpoint of a process that is gone, owned by this uid,
// regular files, go; a live process's, another name, a link and another
// user's file stay.
#include "ofi_shm_sweep.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace cxlpool::drivers::ofi {
namespace {

namespace fs = std::filesystem;

// A pid that no process has any more: a child that exited and was reaped.
long dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

void touch(const fs::path& p) { std::ofstream(p) << "region"; }

TEST(OfiShmSweep, RemovesOnlyTheEndpointsOfProcessesThatAreGone) {
  cxlpool::test::TempDir dir;
  const long gone = dead_pid();
  ASSERT_NE(::kill(static_cast<pid_t>(gone), 0), 0) << "the child's pid is free";
  const fs::path root = dir.path();
  const fs::path dead = root / (shm_endpoint_name(gone, 7) + ":region");
  const fs::path dead_plain = root / shm_endpoint_name(gone, 8);
  const fs::path live = root / (shm_endpoint_name(::getpid(), 7) + ":region");
  const fs::path other = root / "cxlpool-net-a-1.link";
  const fs::path not_pid = root / "cxlpool-12x-1";
  const fs::path link = root / (shm_endpoint_name(gone, 9) + ":link");
  for (const fs::path& p : {dead, dead_plain, live, other, not_pid}) touch(p);
  fs::create_symlink(live, link);

  EXPECT_EQ(remove_dead_shm_endpoints(root.string()), 2u);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(dead_plain));
  EXPECT_TRUE(fs::exists(live)) << "a live process's endpoint stays";
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(not_pid));
  EXPECT_TRUE(fs::is_symlink(link)) << "a link is not followed or removed";
  EXPECT_EQ(remove_dead_shm_endpoints((root / "missing").string()), 0u) << "no directory: nothing to do";
}

TEST(OfiShmSweep, AnotherUsersFileStays) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a file owned by another user";
  cxlpool::test::TempDir dir;
  const fs::path theirs = dir.path() / shm_endpoint_name(dead_pid(), 1);
  touch(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  EXPECT_EQ(remove_dead_shm_endpoints(dir.path().string()), 0u);
  EXPECT_TRUE(fs::exists(theirs));
}

}  // namespace
}  // namespace cxlpool::drivers::ofi
