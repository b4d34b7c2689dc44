// SPDX-License-Identifier: Apache-2.0
#include "whole_file.hpp"

#include <cerrno>
#include <fstream>
#include <iterator>
#include <system_error>

namespace cxlpool::test {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  const auto* first = reinterpret_cast<const std::byte*>(text.data());
  return std::vector<std::byte>(first, first + text.size());
}

void write_file(const std::filesystem::path& path, std::span<const std::byte> content) {
  write_file(path, std::string_view(reinterpret_cast<const char*>(content.data()), content.size()));
}

void write_file(const std::filesystem::path& path, std::string_view content) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) throw std::system_error(errno, std::generic_category(), "write " + path.string());
}

}  // namespace cxlpool::test
