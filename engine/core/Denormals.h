#pragma once
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#include <pmmintrin.h>
#endif

namespace strata {

// Adam's second-moment estimates for weights fed by always-zero pixels decay
// into denormals, which make x86 float arithmetic many times slower. Every
// compute thread turns on flush-to-zero and denormals-are-zero.
inline void enable_flush_denormals() {
#if defined(__SSE__) || defined(__x86_64__)
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

}  // namespace strata
