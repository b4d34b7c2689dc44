// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/access_source.hpp"

#include "cxlpool/common/enum_names.hpp"

namespace cxlpool::hal {

namespace {

constexpr EnumName<AddressSpace> kAddressSpaceNames[] = {
    {AddressSpace::kPoolRegion, "region"},
    {AddressSpace::kProcess, "process"},
    {AddressSpace::kPhysical, "physical"},
    {AddressSpace::kTrace, "trace"},
};

}  // namespace

const char* address_space_name(AddressSpace space) { return enum_name(kAddressSpaceNames, space, "unknown"); }

}  // namespace cxlpool::hal
