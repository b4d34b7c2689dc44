// SPDX-License-Identifier: Apache-2.0
// A file's whole content in one call, for tests that check what a program
// wrote or hand it a configuration.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cxlpool::test {

// The bytes of `path`; "" (none) when it is missing or unreadable.
std::string read_file(const std::filesystem::path& path);
std::vector<std::byte> read_bytes(const std::filesystem::path& path);

// Replaces `path`'s content with `content` (created when missing; the
// directories above it too). Throws std::system_error when it cannot write.
void write_file(const std::filesystem::path& path, std::string_view content);
void write_file(const std::filesystem::path& path, std::span<const std::byte> content);

}  // namespace cxlpool::test
