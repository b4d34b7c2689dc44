// SPDX-License-Identifier: Apache-2.0
// A gtest fixture for tests that run whole jobs: a directory of its own on
// the build tree's file system (O_DIRECT works there; tmpfs may refuse it),
// removed afterwards, and a psync job on a file in it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "job/job_spec.hpp"

namespace cxlpool::io {

class RunDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(CXLPOOL_IO_TEST_DIR) /
           (prefix() + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Names the directory apart from other suites' in the same build tree.
  virtual std::string prefix() const = 0;

  JobSpec job(const std::string& name, RwMode rw, std::uint64_t size = 1 << 20) {
    JobSpec j;
    j.name = name;
    j.rw = rw;
    j.size = size;
    j.filenames = {(dir_ / (name + ".dat")).string()};
    return j;
  }

  std::filesystem::path dir_;
};

}  // namespace cxlpool::io
