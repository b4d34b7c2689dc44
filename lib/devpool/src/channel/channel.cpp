// SPDX-License-Identifier: Apache-2.0
// The channel for the real line access policies.
#include "channel_impl.hpp"

namespace cxlpool::devpool {

template class ChannelProducer<CoherentLines>;
template class ChannelConsumer<CoherentLines>;
template class ChannelProducer<NonCoherentLines>;
template class ChannelConsumer<NonCoherentLines>;

}  // namespace cxlpool::devpool
