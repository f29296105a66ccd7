// The cuDNN workspace's growth where the device has no room (host-side
// logic; runs without a GPU: no stream is being captured here).
#include <QTest>
#include <cstdlib>
#include <vector>

#include "InertDeviceMemory.h"
#include "backend/cuda/CudnnWorkspace.h"
#include "core/Error.h"

using namespace strata;

namespace {
// Device memory with a fixed capacity, counting what is held and how often
// an allocation was tried.
class LimitedMemory final : public InertDeviceMemory {
public:
  explicit LimitedMemory(size_t limit) : limit_(limit) {}
  size_t held = 0;
  int tries = 0;
  void* allocate(size_t bytes) override {
    ++tries;
    if (held + bytes > limit_) throw device_memory_exhausted("gpu:0: out of device memory", "gpu:0");
    held += bytes;
    return std::malloc(bytes);
  }
  void deallocate(void* p, size_t bytes) override {
    held -= bytes;
    std::free(p);
  }

private:
  size_t limit_;
};
}  // namespace

class CudnnWorkspaceTest : public QObject {
  Q_OBJECT
private slots:
  // Shape A's workspace fits, shape B's does not beside it: B is not
  // offered, A keeps its buffer (a failed growth once retired it and leaked
  // a new one every step), and B's size is not tried again at every call
  // (each failed try synchronises the device and trims its pools).
  void aShapeThatDoesNotFitLeavesTheWorkspaceAlone() {
    LimitedMemory memory(100);
    cuda::CudnnWorkspace workspace(memory, "gpu:0", nullptr);
    for (int step = 0; step < 20; ++step) {
      QVERIFY(workspace.try_reserve(10));
      QVERIFY(!workspace.try_reserve(95));
      QCOMPARE(workspace.bytes(), size_t(10));
      QCOMPARE(memory.held, size_t(10));
    }
    QCOMPARE(memory.tries, 2);  // A once, B once: its next try waits for later calls
    // A smaller size that fits is still given.
    QVERIFY(workspace.try_reserve(60));
    QCOMPARE(workspace.bytes(), size_t(60));
  }

  // A size that never fits is tried again after 64 calls, then after twice as
  // many each time (a fixed 64 kept a device short of memory synchronising a
  // few times a step for the whole run); once it fits, the period starts over.
  void retriesOfASizeThatNeverFitsThinOut() {
    LimitedMemory memory(100);
    cuda::CudnnWorkspace workspace(memory, "gpu:0", nullptr);
    std::vector<int> tried_at;
    for (int call = 1; call <= 1000; ++call) {
      const int before = memory.tries;
      QVERIFY(!workspace.try_reserve(120));
      if (memory.tries > before) tried_at.push_back(call);
    }
    QCOMPARE(tried_at, (std::vector<int>{1, 65, 193, 449, 961}));  // was every 64th: 16 tries
    QCOMPARE(memory.held, size_t(0));
    // A size that fits resets the period: the next refusal is tried again after 64 calls.
    QVERIFY(workspace.try_reserve(40));
    const int before = memory.tries;
    for (int call = 1; call <= 65; ++call) QVERIFY(!workspace.try_reserve(80));
    QCOMPARE(memory.tries - before, 2);
  }
};

QTEST_GUILESS_MAIN(CudnnWorkspaceTest)
#include "test_cudnn_workspace.moc"
