#pragma once
// The kernels at a training step's edges (CudaKernels.cu: loss, statistics,
// label checks, batch gathering, Adam) against the CPU backend.
#include <QObject>

#include "Scheduler.h"

class TestStepKernels : public QObject {
  Q_OBJECT
private slots:
  // Forgets what a failed test function left behind.
  void init() { emu::take_violations(); }
  void sparse_softmax_xent_average();
  void gather_step_stats();
  void count_correct();
  void check_labels();
  void gather_examples();
  void adam_update_many();
};
