#pragma once
// The image kernels (CudaImageKernels.cu) against the CPU backend.
#include <QObject>

#include "Scheduler.h"

class TestImageKernels : public QObject {
  Q_OBJECT
private slots:
  // Forgets what a failed test function left behind.
  void init() { emu::take_violations(); }
  void im2col_col2im();
  void max_pool();
  void avg_pool();
  // The three on windows drawn at random (STRATA_TEST_SEED chooses them).
  void random_windows();
};
