// SPDX-License-Identifier: Apache-2.0
// Finding the guest's ivshmem-plain device (PCI 1af4:1110), whose BAR 2 is
// the host file QEMU maps with memory-backend-file,share=on.
#pragma once

#include <string>

#include "cxlpool/common/result.hpp"

namespace cxlpool::vmtest {

// The sysfs path of its BAR 2 (".../0000:00:03.0/resource2"), after
// enabling the device so its memory BAR decodes. ENODEV when the guest has
// no such device.
Result<std::string> enable_ivshmem_bar2();

}  // namespace cxlpool::vmtest
