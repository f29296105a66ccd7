#pragma once

namespace strata {

// How an optimizer update writes the weights. Streamed: other cores read
// them next (host replicas sharing one copy), so they are written past this
// core's caches (non-temporal stores) instead of each cache line first being
// taken back from the cores that read it, which made a sharded update on two
// cores several times slower than the same update alone. The values are the
// same either way; a backend whose memory is not shared that way ignores it.
enum class WeightStores { Cached, Streamed };

}  // namespace strata
