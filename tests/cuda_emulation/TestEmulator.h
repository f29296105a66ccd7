#pragma once
// The emulation itself (Scheduler.h, shim/): what the kernel tests rely on
// it to do, and to catch.
#include <QObject>

#include "Scheduler.h"

class TestEmulator : public QObject {
  Q_OBJECT
private slots:
  void init() { emu::take_violations(); }
  void shared_memory_and_barriers();
  void warp_shuffles();
  void block_reduce();
  void exit_before_barrier_is_reported();
  void bad_configuration_is_a_launch_error();
};
