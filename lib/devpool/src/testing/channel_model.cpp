// SPDX-License-Identifier: Apache-2.0
// The channel over the cache model (tests only).
#include "../channel/channel_impl.hpp"
#include "cxlpool/devpool/testing/cache_model.hpp"

namespace cxlpool::devpool {

template class ChannelProducer<testing::ModelLines>;
template class ChannelConsumer<testing::ModelLines>;

}  // namespace cxlpool::devpool
