// SPDX-License-Identifier: Apache-2.0
#include "ofi_probe.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ofi_defaults.hpp"

namespace cxlpool::drivers {

hal::BackendReport probe_ofi() {
  hal::BackendReport report{"Transport", "ofi", hal::BackendState::kNotPresent, ""};
  const uint32_t runtime = fi_version();
  const std::string lib = "libfabric " + std::to_string(FI_MAJOR(runtime)) + "." +
                          std::to_string(FI_MINOR(runtime));
  fi_info* info = nullptr;
  ofi::apply_libfabric_defaults();
  const int rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr, &info);
  if (rc == -FI_ENODATA) {
    report.detail = lib + ": no providers";
    return report;
  }
  if (rc != 0) {
    report.state = hal::BackendState::kFailed;
    report.detail = lib + ": fi_getinfo: " + fi_strerror(-rc);
    return report;
  }
  std::vector<std::string> providers;
  for (const fi_info* i = info; i != nullptr; i = i->next) {
    if (i->fabric_attr == nullptr || i->fabric_attr->prov_name == nullptr) continue;
    const std::string name = i->fabric_attr->prov_name;
    if (std::find(providers.begin(), providers.end(), name) == providers.end()) {
      providers.push_back(name);
    }
  }
  fi_freeinfo(info);
  if (providers.empty()) {
    report.detail = lib + ": no providers";
    return report;
  }
  report.state = hal::BackendState::kAvailable;
  report.detail = lib + "; providers: ";
  for (size_t i = 0; i < providers.size(); ++i) {
    report.detail += (i ? ", " : "") + providers[i];
  }
  return report;
}

}  // namespace cxlpool::drivers
