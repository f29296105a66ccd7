#pragma once
// The per-channel kernels (CudaChannelKernels.cu) against the CPU backend.
#include <QObject>

#include "Scheduler.h"

class TestChannelKernels : public QObject {
  Q_OBJECT
private slots:
  // Forgets what a failed test function left behind.
  void init() { emu::take_violations(); }
  void channel_sums();
  void sum_rows_and_bias_gradient();
  void batch_norm_backward_reductions();
  void batch_norm_apply();
  void batch_norm_backward_apply();
  void batch_norm_statistics();
};
