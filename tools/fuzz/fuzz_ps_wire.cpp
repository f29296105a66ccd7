// A parameter server's view of a push header from another rank: whatever
// arrives is checked before any value is used as an index or a count.
#include <cstring>

#include "FuzzInput.h"
#include "distribute/mpi/MpiParameterProtocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using strata::mpi_ps::PushHeader;
  double h[PushHeader::kCount] = {};
  const int count = static_cast<int>(std::min(size / sizeof(double), size_t{PushHeader::kCount + 1}));
  std::memcpy(h, data, std::min(size, sizeof h));
  const int workers = size > 0 ? 1 + data[0] % 8 : 1;
  PushHeader out{};
  strata::mpi_ps::decode_push_header(h, count, workers, out);  // false: refused; never undefined behaviour
  return 0;
}
