// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/testing/cache_model.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cxlpool::devpool::testing {

CacheModel::CacheModel(std::byte* memory, size_t bytes) : memory_(memory), lines_(bytes / kLineBytes) {}

size_t CacheModel::index_of(const void* line) const {
  const auto* p = static_cast<const std::byte*>(line);
  const auto offset = static_cast<size_t>(p - memory_);
  // The channel touching anything but a whole line of its own memory is a
  // bug the tests must not miss.
  if (p < memory_ || offset % kLineBytes != 0 || offset / kLineBytes >= lines_.size()) {
    std::fprintf(stderr, "cache model: access to %p outside the modelled memory\n", line);
    std::abort();
  }
  return offset / kLineBytes;
}

void CacheModel::write_line_back(size_t index) {
  Line& l = lines_[index];
  if (l.present && l.dirty) {
    std::memcpy(memory_ + index * kLineBytes, l.data.data(), kLineBytes);
    l.dirty = false;
  }
}

void CacheModel::load(const void* line, void* out64) {
  const size_t index = index_of(line);
  prefetch(index);
  std::memcpy(out64, lines_[index].data.data(), kLineBytes);
}

void CacheModel::store(void* line, const void* in64) {
  Line& l = lines_[index_of(line)];
  std::memcpy(l.data.data(), in64, kLineBytes);
  l.present = true;
  l.dirty = true;
}

void CacheModel::write_back(const void* line) { write_line_back(index_of(line)); }

void CacheModel::invalidate(const void* line) { evict(index_of(line)); }

void CacheModel::evict(size_t index) {
  write_line_back(index);
  lines_[index] = Line{};
}

void CacheModel::prefetch(size_t index) {
  Line& l = lines_[index];
  if (l.present) return;
  std::memcpy(l.data.data(), memory_ + index * kLineBytes, kLineBytes);
  l.present = true;
  l.dirty = false;
}

void CacheModel::append_state(std::string& out) const {
  for (const Line& l : lines_) {
    out.push_back(static_cast<char>(l.present | l.dirty << 1));
    if (l.present) out.append(reinterpret_cast<const char*>(l.data.data()), kLineBytes);
  }
}

}  // namespace cxlpool::devpool::testing
