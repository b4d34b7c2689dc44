// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/weights/safetensors.hpp"
#include "cxlpool/weights/safetensors_writer.hpp"

namespace cxlpool::weights {
namespace {

constexpr size_t kDataAlignment = 8;

Result<void> write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return fail_errno("write");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

void put_le64(std::byte* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}

}  // namespace

Result<void> SafetensorsWriter::add(std::string name, Dtype dtype, std::vector<uint64_t> shape,
                                    std::span<const std::byte> data) {
  if (name.empty() || name == "__metadata__") return fail(EINVAL, "tensor name empty or reserved");
  if (name.size() > ParseLimits{}.max_name_bytes) return fail(EINVAL, "tensor name too long: " + name);
  if (dtype_size(dtype) == 0) return fail(EINVAL, "unknown dtype for " + name);
  if (shape.size() > kMaxTensorDims) return fail(EINVAL, "too many dimensions for " + name);
  uint64_t bytes = dtype_size(dtype);
  for (uint64_t d : shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) return fail(EINVAL, "shape overflows for " + name);
  }
  if (bytes != data.size()) {
    return fail(EINVAL, name + ": " + std::to_string(data.size()) + " bytes given, shape needs " +
                            std::to_string(bytes));
  }
  for (const auto& t : tensors_) {
    if (t.name == name) return fail(EINVAL, "tensor added twice: " + name);
  }
  tensors_.push_back(Pending{std::move(name), dtype, std::move(shape),
                             std::vector<std::byte>(data.begin(), data.end())});
  return {};
}

Result<void> SafetensorsWriter::add_f32(std::string name, std::vector<uint64_t> shape,
                                        std::span<const float> data) {
  return add(std::move(name), Dtype::kF32, std::move(shape), std::as_bytes(data));
}

void SafetensorsWriter::set_metadata(std::string key, std::string value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

std::string SafetensorsWriter::header_json() const {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata_) meta[k] = v;
    doc["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    doc[t.name] = {{"dtype", std::string(dtype_name(t.dtype))},
                   {"shape", t.shape},
                   {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  // Names are caller strings: replace invalid UTF-8 rather than throw.
  std::string text = doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  size_t total = kSafetensorsPrefixBytes + text.size();
  text.append((kDataAlignment - total % kDataAlignment) % kDataAlignment, ' ');
  return text;
}

std::vector<std::byte> SafetensorsWriter::serialize() const {
  std::string header = header_json();
  size_t data_bytes = 0;
  for (const auto& t : tensors_) data_bytes += t.data.size();
  std::vector<std::byte> out(kSafetensorsPrefixBytes + header.size() + data_bytes);
  put_le64(out.data(), header.size());
  std::memcpy(out.data() + kSafetensorsPrefixBytes, header.data(), header.size());
  size_t at = kSafetensorsPrefixBytes + header.size();
  for (const auto& t : tensors_) {
    if (!t.data.empty()) std::memcpy(out.data() + at, t.data.data(), t.data.size());
    at += t.data.size();
  }
  return out;
}

Result<void> SafetensorsWriter::write_file(const std::string& path) const {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail_errno("create " + tmp);
  UniqueFd guard(fd);
  std::string header = header_json();
  std::byte prefix[kSafetensorsPrefixBytes];
  put_le64(prefix, header.size());
  auto ok = write_all(fd, prefix, sizeof prefix);
  if (ok) ok = write_all(fd, header.data(), header.size());
  for (const auto& t : tensors_) {
    if (!ok) break;
    ok = write_all(fd, t.data.data(), t.data.size());
  }
  if (ok && ::fsync(fd) != 0) ok = fail_errno("fsync " + tmp);
  guard.reset();
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) ok = fail_errno("rename to " + path);
  if (!ok) {
    ::unlink(tmp.c_str());
    return fail(ok.error().code, path + ": " + ok.error().message);
  }
  return {};
}

}  // namespace cxlpool::weights
