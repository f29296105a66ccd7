#pragma once
// The element-wise, per-row and scalar kernels (CudaKernels.cu) against the CPU backend.
#include <QObject>

#include "Scheduler.h"

class TestDenseKernels : public QObject {
  Q_OBJECT
private slots:
  // Forgets what a failed test function left behind.
  void init() { emu::take_violations(); }
  void elementwise();
  void activations();
  void per_row_losses();
  void scalars_and_rows();
  void optimizers();
  void transpose_and_fill();
};
