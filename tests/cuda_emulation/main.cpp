// The CUDA backend's kernels on the emulated GPU (see CMakeLists.txt), one
// Qt Test class per kernel file, after the emulation's own test. Every class runs; the exit status is
// nonzero if any failed.
#include <QtTest/QtTest>

#include "TestChannelKernels.h"
#include "TestDenseKernels.h"
#include "TestEmulator.h"
#include "TestImageKernels.h"
#include "TestStepKernels.h"

int main(int argc, char** argv) {
  int failed = 0;
  {
    TestEmulator t;
    failed += QTest::qExec(&t, argc, argv);
  }
  {
    TestChannelKernels t;
    failed += QTest::qExec(&t, argc, argv);
  }
  {
    TestStepKernels t;
    failed += QTest::qExec(&t, argc, argv);
  }
  {
    TestDenseKernels t;
    failed += QTest::qExec(&t, argc, argv);
  }
  {
    TestImageKernels t;
    failed += QTest::qExec(&t, argc, argv);
  }
  return failed == 0 ? 0 : 1;
}
