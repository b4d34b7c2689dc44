// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/weights/safetensors.hpp"

namespace cxlpool::weights {
namespace {

using nlohmann::json;

tl::unexpected<Error> bad(std::string message) { return fail(EBADMSG, std::move(message)); }

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

Result<TensorInfo> parse_tensor(const std::string& name, const json& entry, uint64_t data_bytes,
                                const ParseLimits& limits) {
  std::string who = "tensor '" + name + "'";
  if (name.size() > limits.max_name_bytes) {
    return bad("tensor name longer than " + std::to_string(limits.max_name_bytes) + " bytes");
  }
  if (!entry.is_object()) return bad(who + ": entry is not an object");
  for (const auto& [key, value] : entry.items()) {
    (void)value;
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return bad(who + ": unknown field '" + key + "'");
    }
  }
  TensorInfo t;
  t.name = name;

  auto dt = entry.find("dtype");
  if (dt == entry.end() || !dt->is_string()) return bad(who + ": missing or non-string dtype");
  auto dtype = dtype_from_name(dt->get_ref<const std::string&>());
  if (!dtype) return bad(who + ": unknown dtype '" + dt->get_ref<const std::string&>() + "'");
  t.dtype = *dtype;

  auto sh = entry.find("shape");
  if (sh == entry.end() || !sh->is_array()) return bad(who + ": missing or non-array shape");
  if (sh->size() > kMaxTensorDims) {
    return bad(who + ": " + std::to_string(sh->size()) + " dimensions (at most " +
               std::to_string(kMaxTensorDims) + ")");
  }
  uint64_t elements = 1;
  for (const auto& d : *sh) {
    if (!d.is_number_unsigned()) return bad(who + ": shape holds a non-integer or negative dimension");
    uint64_t dim = d.get<uint64_t>();
    t.shape.push_back(dim);
    if (mul_overflows(elements, dim, &elements)) return bad(who + ": shape element count overflows");
  }
  uint64_t expect_bytes = 0;
  if (mul_overflows(elements, dtype_size(t.dtype), &expect_bytes)) {
    return bad(who + ": shape byte count overflows");
  }

  auto off = entry.find("data_offsets");
  if (off == entry.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned()) {
    return bad(who + ": data_offsets must be two unsigned integers");
  }
  t.begin = (*off)[0].get<uint64_t>();
  t.end = (*off)[1].get<uint64_t>();
  if (t.end < t.begin) return bad(who + ": data_offsets end before begin");
  if (t.end > data_bytes) {
    return bad(who + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
               ") past the data section (" + std::to_string(data_bytes) + " bytes)");
  }
  if (t.end - t.begin != expect_bytes) {
    return bad(who + ": data_offsets span " + std::to_string(t.end - t.begin) + " bytes, dtype " +
               std::string(dtype_name(t.dtype)) + " and shape need " + std::to_string(expect_bytes));
  }
  return t;
}

}  // namespace

const TensorInfo* SafetensorsHeader::find(std::string_view name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Result<uint64_t> parse_header_size(std::span<const std::byte> prefix, uint64_t file_size,
                                   const ParseLimits& limits) {
  if (prefix.size() < kSafetensorsPrefixBytes || file_size < kSafetensorsPrefixBytes) {
    return bad("file shorter than the 8-byte header length");
  }
  uint64_t n = 0;
  for (size_t i = 0; i < kSafetensorsPrefixBytes; ++i) {
    n |= static_cast<uint64_t>(prefix[i]) << (8 * i);
  }
  if (n < 2) return bad("header length " + std::to_string(n) + " too small for a JSON object");
  if (n > limits.max_header_bytes) {
    return bad("header length " + std::to_string(n) + " over the limit of " +
               std::to_string(limits.max_header_bytes) + " bytes");
  }
  if (n > file_size - kSafetensorsPrefixBytes) {
    return bad("header length " + std::to_string(n) + " past the end of the file (" +
               std::to_string(file_size) + " bytes)");
  }
  return n;
}

Result<SafetensorsHeader> parse_header(std::string_view text, uint64_t file_size, const ParseLimits& limits) {
  if (text.size() > limits.max_header_bytes) return bad("header over the size limit");
  if (file_size < kSafetensorsPrefixBytes + text.size()) return bad("header past the end of the file");
  if (text.empty() || text.front() != '{') return bad("header does not start with '{'");

  // nlohmann keeps the last of duplicate keys silently; a file naming one
  // tensor twice is ambiguous, so duplicates are caught while parsing.
  std::set<std::string> top_keys;
  std::set<std::string> inner_keys;
  std::string duplicate;
  size_t key_count = 0;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start && depth == 1) inner_keys.clear();
    if (event == json::parse_event_t::key && duplicate.empty()) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (depth == 1) {
        if (k != "__metadata__") ++key_count;
        if (!top_keys.insert(k).second) duplicate = k;
      } else if (depth == 2) {
        if (!inner_keys.insert(k).second) duplicate = k;
      }
    }
    return true;
  };
  json doc = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return bad("header is not valid JSON");
  if (!duplicate.empty()) return bad("duplicate key '" + duplicate + "' in the header");
  if (!doc.is_object()) return bad("header is not a JSON object");
  if (key_count > limits.max_tensors) {
    return bad("header names " + std::to_string(key_count) + " tensors (at most " +
               std::to_string(limits.max_tensors) + ")");
  }

  SafetensorsHeader h;
  h.header_bytes = text.size();
  h.data_offset = kSafetensorsPrefixBytes + text.size();
  h.data_bytes = file_size - h.data_offset;
  for (const auto& [name, entry] : doc.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return bad("__metadata__ is not an object");
      if (entry.size() > limits.max_metadata_entries) return bad("__metadata__ has too many entries");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) return bad("__metadata__ value of '" + k + "' is not a string");
        h.metadata.emplace(k, v.get<std::string>());
      }
      continue;
    }
    if (name.empty()) return bad("empty tensor name");
    auto t = parse_tensor(name, entry, h.data_bytes, limits);
    if (!t) return tl::unexpected(t.error());
    h.tensors.push_back(std::move(*t));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.name < b.name;
  });
  const TensorInfo* prev = nullptr;
  for (const auto& t : h.tensors) {
    if (t.bytes() == 0) continue;
    if (prev && t.begin < prev->end) {
      return bad("tensors '" + prev->name + "' and '" + t.name + "' overlap at data offset " +
                 std::to_string(t.begin));
    }
    prev = &t;
  }
  return h;
}

Result<SafetensorsHeader> read_header(int fd, const ParseLimits& limits) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail_errno("fstat");
  if (!S_ISREG(st.st_mode)) return fail(EINVAL, "not a regular file");
  auto file_size = static_cast<uint64_t>(st.st_size);
  std::array<std::byte, kSafetensorsPrefixBytes> prefix{};
  ssize_t got = pread(fd, prefix.data(), prefix.size(), 0);
  if (got < 0) return fail_errno("read header length");
  auto n = parse_header_size(std::span<const std::byte>(prefix.data(), static_cast<size_t>(got)),
                             file_size, limits);
  if (!n) return tl::unexpected(n.error());
  std::string text(*n, '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t r = pread(fd, text.data() + done, text.size() - done,
                      static_cast<off_t>(kSafetensorsPrefixBytes + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return fail_errno("read header");
    }
    if (r == 0) return bad("file shrank while reading the header");
    done += static_cast<size_t>(r);
  }
  return parse_header(text, file_size, limits);
}

Result<SafetensorsHeader> read_header_file(const std::string& path, const ParseLimits& limits) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail_errno(path);
  UniqueFd guard(fd);
  auto h = read_header(fd, limits);
  if (!h) return fail(h.error().code, path + ": " + h.error().message);
  return h;
}

}  // namespace cxlpool::weights
