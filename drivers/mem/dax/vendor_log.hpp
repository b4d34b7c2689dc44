// SPDX-License-Identifier: Apache-2.0
// libcxl and libdaxctl print to stderr unless given a log function; route
// their messages to cxlpool's log sink instead (libraries never print).
#pragma once

struct cxl_ctx;
struct daxctl_ctx;

namespace cxlpool::drivers {

void route_cxl_log(cxl_ctx* ctx);
void route_daxctl_log(daxctl_ctx* ctx);

}  // namespace cxlpool::drivers
