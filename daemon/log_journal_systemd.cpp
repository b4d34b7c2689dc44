// SPDX-License-Identifier: Apache-2.0
#include <sys/uio.h>

#include <systemd/sd-journal.h>

#include "log_journal.hpp"

namespace cxlpool::daemon {

bool have_journal() { return true; }

int journal_send(const std::vector<std::string>& fields) {
  std::vector<iovec> iov;
  iov.reserve(fields.size());
  for (const auto& f : fields) iov.push_back({const_cast<char*>(f.data()), f.size()});
  return sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
}

}  // namespace cxlpool::daemon
