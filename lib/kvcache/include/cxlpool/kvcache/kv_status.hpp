// SPDX-License-Identifier: Apache-2.0
#pragma once
// Outcomes of the KV store's data path (lookups, gets, puts, reads of the SSD
// log...). A miss, a refusal for want of room or a damaged record is what a
// cache expects to happen, many times a second: such calls return a KvStatus
// (a byte), never an Error with a message, so answering them allocates
// nothing. Errno values appear only where the outcome leaves the process: the
// daemon turns a status into the ring completion's `-errno` with to_errno()
// below (the wire's values, docs/kvstore.md "Request outcomes"), and the
// client library hands those on at the C ABI. Setup failures (bad
// configuration, a device that cannot be opened) stay Result/Error.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <utility>

#include "cxlpool/common/enum_names.hpp"

namespace cxlpool::kvcache {

enum class KvStatus : std::uint8_t {
  kOk = 0,
  kNotFound,       // no such chunk, key, namespace, lease, reservation or client
  kRejected,       // refused for want of room: every slot leased, an index full
  kRetry,          // a put window full, or too many reservations open: may work later
  kBusy,           // the chunk is leased: it cannot move now
  kOverQuota,      // the account's leased + reserved bytes would pass its quota
  kTooManyLeases,  // the client holds max_leases_per_client leases
  kTooLarge,       // a chunk larger than a slot (or an SSD region)
  kInvalid,        // a malformed request or argument (a key twice, a bad buffer)
  kNotPermitted,   // the client has no put window
  kDenied,         // the namespace was not opened with the right the op needs
  kChecksumError,  // the record read back does not match its CRC32C (dropped)
  kDeviceError,    // the device failed (KvOutcome::device_errno says how), or a short read
  kBadState,       // the call does not fit the entry's state (insert of a present key...)
};

inline constexpr std::size_t kKvStatusCount = static_cast<std::size_t>(KvStatus::kBadState) + 1;

// A status and, for kDeviceError, the errno the device (or the kernel, or
// the allocator behind its I/O) gave, which the wire passes on unchanged.
// Four bytes: an outcome, and a KvResult of a 32-bit value, come back in one
// register (a wider struct with padding is assembled on the stack and read
// back whole, a stall on every index call).
struct KvOutcome {
  KvStatus status = KvStatus::kOk;
  std::uint8_t reserved = 0;
  std::uint16_t device_errno = 0;  // kDeviceError only; 0 there means EIO (errnos end at 4095)

  constexpr KvOutcome() = default;
  constexpr KvOutcome(KvStatus s) : status(s) {}  // NOLINT(google-explicit-constructor): statuses are outcomes
  [[nodiscard]] static constexpr KvOutcome device_error(int err) {
    KvOutcome o(KvStatus::kDeviceError);
    o.device_errno = err > 0 && err < 0x10000 ? static_cast<std::uint16_t>(err) : 0;
    return o;
  }
  [[nodiscard]] constexpr bool ok() const { return status == KvStatus::kOk; }
  constexpr explicit operator bool() const { return ok(); }
  friend constexpr bool operator==(const KvOutcome&, const KvOutcome&) = default;
};
static_assert(sizeof(KvOutcome) == 4);

// An outcome and, when it is kOk, the call's value.
template <typename T>
struct [[nodiscard]] KvResult {
  KvOutcome outcome;
  T value{};

  constexpr KvResult(const T& v) : value(v) {}            // NOLINT(google-explicit-constructor)
  constexpr KvResult(T&& v) : value(std::move(v)) {}      // NOLINT(google-explicit-constructor)
  constexpr KvResult(KvOutcome o) : outcome(o) {}         // NOLINT(google-explicit-constructor)
  constexpr KvResult(KvStatus s) : outcome(s) {}          // NOLINT(google-explicit-constructor)
  [[nodiscard]] constexpr bool ok() const { return outcome.ok(); }
  constexpr explicit operator bool() const { return ok(); }
  [[nodiscard]] constexpr KvStatus status() const { return outcome.status; }
  constexpr const T& operator*() const { return value; }
  constexpr const T* operator->() const { return &value; }
};

// The one mapping to errno (positive; 0 for kOk): what the ring completion
// carries negated, and what the C ABI returns. kDeviceError gives EIO here;
// to_errno(KvOutcome) gives the device's own errno.
[[nodiscard]] constexpr int to_errno(KvStatus s) {
  switch (s) {
    case KvStatus::kOk: return 0;
    case KvStatus::kNotFound: return ENOENT;
    case KvStatus::kRejected: return ENOSPC;
    case KvStatus::kRetry: return EAGAIN;
    case KvStatus::kBusy: return EBUSY;
    case KvStatus::kOverQuota: return EDQUOT;
    case KvStatus::kTooManyLeases: return EMFILE;
    case KvStatus::kTooLarge: return EMSGSIZE;
    case KvStatus::kInvalid: return EINVAL;
    case KvStatus::kNotPermitted: return EPERM;
    case KvStatus::kDenied: return EACCES;
    case KvStatus::kChecksumError: return EBADMSG;
    case KvStatus::kDeviceError: return EIO;
    case KvStatus::kBadState: return EINVAL;
  }
  return EINVAL;
}

[[nodiscard]] constexpr int to_errno(const KvOutcome& o) {
  return o.status == KvStatus::kDeviceError && o.device_errno != 0 ? o.device_errno : to_errno(o.status);
}

// Stable lower-case names, for logs and counter names.
inline constexpr EnumName<KvStatus> kKvStatusNames[] = {
    {KvStatus::kOk, "ok"},
    {KvStatus::kNotFound, "not_found"},
    {KvStatus::kRejected, "rejected"},
    {KvStatus::kRetry, "retry"},
    {KvStatus::kBusy, "busy"},
    {KvStatus::kOverQuota, "over_quota"},
    {KvStatus::kTooManyLeases, "too_many_leases"},
    {KvStatus::kTooLarge, "too_large"},
    {KvStatus::kInvalid, "invalid"},
    {KvStatus::kNotPermitted, "not_permitted"},
    {KvStatus::kDenied, "denied"},
    {KvStatus::kChecksumError, "checksum_error"},
    {KvStatus::kDeviceError, "device_error"},
    {KvStatus::kBadState, "bad_state"},
};
static_assert(std::size(kKvStatusNames) == kKvStatusCount);

[[nodiscard]] constexpr std::string_view to_string(KvStatus s) { return enum_name(kKvStatusNames, s, "?"); }

}  // namespace cxlpool::kvcache
