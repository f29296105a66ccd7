#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace strata {

// Spins while `waiting()` holds, for at most 4,000 pauses (118-133 us on the
// 2-core guest the benchmarks ran on), before the caller sleeps. Threads that
// hand work to each other every step usually meet within microseconds, and
// a sleeping thread's wake-up costs tens of them (on a virtual machine an
// idle CPU halts, and waking it is a trip through the hypervisor).
template <typename Pred>
void spin_while(Pred waiting) {
  for (int spin = 0; spin < 4000 && waiting(); ++spin) {
#if defined(__x86_64__)
    _mm_pause();
#endif
  }
}

}  // namespace strata
