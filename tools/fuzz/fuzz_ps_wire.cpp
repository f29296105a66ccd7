// A parameter server's view of a push header from another rank: whatever
// arrives is checked before any value is used as an index or a count, and
// what passes encodes back to a header that passes again.
#include <cstdlib>
#include <cstring>

#include "FuzzInput.h"
#include "distribute/mpi/MpiParameterProtocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::mpi_ps;
  double h[kPushDoubles] = {};
  const int count = static_cast<int>(std::min(size / sizeof(double), size_t{kPushDoubles + 1}));
  std::memcpy(h, data, std::min(size, sizeof h));
  const int workers = size > 0 ? 1 + data[0] % 8 : 1;
  strata::PushRecord out;
  int64_t pulled = 0;
  if (!decode_push(h, count, workers, out, pulled)) return 0;  // refused; never undefined behaviour
  const auto again = encode_push(out, pulled);
  strata::PushRecord back;
  int64_t pulled_back = 0;
  if (!decode_push(again.data(), kPushDoubles, workers, back, pulled_back) || back.round != out.round ||
      back.worker != out.worker || back.examples != out.examples || pulled_back != pulled)
    std::abort();
  return 0;
}
