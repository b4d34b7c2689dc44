// SPDX-License-Identifier: Apache-2.0
// Damage done to an SSD log's file behind its store's back, as a failing
// disk would: the next read of those bytes must notice.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace cxlpool::kvcache::ssd_test {

// Flips one bit of the byte at `offset` and makes it durable.
inline void flip_file_byte(const std::string& path, std::uint64_t offset) {
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  unsigned char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(offset)), 1);
  b ^= 0x10;
  ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(offset)), 1);
  ASSERT_EQ(::fsync(fd), 0);
  ::close(fd);
}

}  // namespace cxlpool::kvcache::ssd_test
