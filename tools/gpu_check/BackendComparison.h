#pragma once
// The "ops" section: every operation of the Backend interface run on a
// device and on the CPU backend with the same fresh random inputs (seeded),
// and the device's results judged against the CPU's (ResultComparison.h,
// tolerances in Tolerances.h). It needs nothing but the interface, so it runs
// on sim:N in CI and on gpu:N on a GPU machine.
//
// Sizes include awkward ones (rows not a multiple of 32, one column, one row,
// no rows, an empty gemm product) and a few of more than 2^20 elements, where
// a kernel's grid has many blocks. Inputs avoid exact ties and kinks except
// where ties are the point (argmax, max pooling), since docs/architecture.md §10: two correct
// implementations may differ there.
#include <cstdint>
#include <vector>

#include "CheckRecord.h"
#include "OpHarness.h"

namespace strata::gpu_check {

class BackendComparison {
public:
  // Throws bad_input when `device` is the host or has no backend in this
  // build. `backend`: see OpHarness (null = backend_for(device)).
  BackendComparison(const Device& device, uint64_t seed, OpHarness::Observer observer = {}, Backend* backend = nullptr);

  // Every check, in the order of the interface; one record per compared output.
  std::vector<CheckRecord> run();

private:
  // BackendComparison.cpp
  void memory();
  void optimizers();
  // BackendComparisonDense.cpp
  void gemm();
  void rows();
  void activations();
  void losses();
  void elementwise();
  void scalars();
  void metrics();
  // BackendComparisonImages.cpp
  void images();
  void convolution();
  void pooling();
  void batch_norm_statistics();
  void batch_norm_layers();

  OpHarness h_;
};

}  // namespace strata::gpu_check
