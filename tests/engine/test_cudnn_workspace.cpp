// The cuDNN workspace's growth where the device has no room (host-side
// logic; runs without a GPU: no stream is being captured here).
#include <QTest>
#include <cstdlib>

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
};

QTEST_GUILESS_MAIN(CudnnWorkspaceTest)
#include "test_cudnn_workspace.moc"
