// The fiber scheduler behind Scheduler.h. A block's fibers run in turn until
// each waits at a barrier or has returned; then the barrier that every live
// thread of its scope (a warp, the block) waits at opens. After each block
// barrier the threads run in a new order (a fixed-seed shuffle: the same on
// every run), so a kernel that reads shared memory another thread writes
// without a barrier between sees its write too early or too late, and fails.
#include "Scheduler.h"

#include <ucontext.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <utility>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace emu {

namespace {

constexpr int kWarp = 32;
constexpr int kMaxThreads = 1024;
// The kernels' frames are small; libm's and the lambdas' add little.
constexpr size_t kStackBytes = size_t{128} << 10;

enum class State { Ready, AtBlockBarrier, AtWarpBarrier, Done };

struct Fiber {
  ucontext_t context{};
  State state = State::Done;
  std::unique_ptr<char[]> stack;  // uninitialised: only the pages a thread touches are committed
};

struct Machine {
  std::vector<Fiber> fibers;
  std::vector<uint64_t> exchange;  // one shuffle slot per thread
  ucontext_t scheduler{};
  const std::function<void()>* body = nullptr;
  int threads = 0, current = 0;
  std::vector<int> order;  // the running order of the block's threads
  std::minstd_rand shuffler{20261206u};
  std::map<std::string, int64_t> violations;  // each kind once, with its count
  int64_t launches = 0;
};

Machine& machine() {
  static Machine m;
  return m;
}

void enter_fiber() {
  Machine& m = machine();
  (*m.body)();
  m.fibers[static_cast<size_t>(m.current)].state = State::Done;
  // Returning resumes uc_link: the scheduler.
}

void resume(int i) {
  Machine& m = machine();
  m.current = i;
  const auto u = static_cast<unsigned>(i);
  threadIdx = {u % blockDim.x, u / blockDim.x % blockDim.y, u / (blockDim.x * blockDim.y)};
  swapcontext(&m.scheduler, &m.fibers[static_cast<size_t>(i)].context);
}

void wait(State s) {
  Machine& m = machine();
  Fiber& f = m.fibers[static_cast<size_t>(m.current)];
  f.state = s;
  swapcontext(&f.context, &m.scheduler);
}

// Opens the barriers every live thread of a warp waits at; true if any.
bool release_warps() {
  Machine& m = machine();
  bool released = false;
  for (int w = 0; w < m.threads; w += kWarp) {
    const int end = std::min(m.threads, w + kWarp);
    int waiting = 0, done = 0;
    for (int i = w; i < end; ++i) {
      waiting += m.fibers[static_cast<size_t>(i)].state == State::AtWarpBarrier;
      done += m.fibers[static_cast<size_t>(i)].state == State::Done;
    }
    if (waiting == 0 || waiting + done != end - w) continue;
    if (done > 0) report("__shfl_xor_sync with the full mask while lanes of the warp have exited");
    for (int i = w; i < end; ++i)
      if (m.fibers[static_cast<size_t>(i)].state == State::AtWarpBarrier)
        m.fibers[static_cast<size_t>(i)].state = State::Ready;
    released = true;
  }
  return released;
}

// Runs one block's threads to their end.
void run_block() {
  Machine& m = machine();
  for (int i = 0; i < m.threads; ++i) {
    Fiber& f = m.fibers[static_cast<size_t>(i)];
    if (!f.stack) f.stack.reset(new char[kStackBytes]);
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.get();
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &m.scheduler;
    makecontext(&f.context, enter_fiber, 0);
    f.state = State::Ready;
  }
  m.order.resize(static_cast<size_t>(m.threads));
  std::iota(m.order.begin(), m.order.end(), 0);
  for (;;) {
    for (int i : m.order)
      if (m.fibers[static_cast<size_t>(i)].state == State::Ready) resume(i);
    if (release_warps()) continue;
    int at_block = 0, done = 0;
    for (int i = 0; i < m.threads; ++i) {
      at_block += m.fibers[static_cast<size_t>(i)].state == State::AtBlockBarrier;
      done += m.fibers[static_cast<size_t>(i)].state == State::Done;
    }
    if (done == m.threads) return;
    if (at_block + done != m.threads) {
      // Abandoned: the fibers' contexts are remade for the next block.
      report("deadlock: lanes of a warp wait at a shuffle while others wait at __syncthreads");
      return;
    }
    // On a GPU this hangs or is undefined; here it goes on, reported.
    if (done > 0) report("__syncthreads reached by some threads of a block after others exited");
    for (int i = 0; i < m.threads; ++i)
      if (m.fibers[static_cast<size_t>(i)].state == State::AtBlockBarrier)
        m.fibers[static_cast<size_t>(i)].state = State::Ready;
    std::shuffle(m.order.begin(), m.order.end(), m.shuffler);
  }
}

}  // namespace

bool run_grid(dim3 grid, dim3 block, size_t dynamic_shared, const std::function<void()>& body) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  // The runtime's limits (any GPU the backend supports).
  if (threads == 0 || threads > kMaxThreads || block.z > 64 || grid.x == 0 || grid.x > 0x7fffffffu || grid.y == 0 ||
      grid.y > 65535 || grid.z == 0 || grid.z > 65535)
    return false;
  // The kernels declare their shared memory statically; dynamic shared memory
  // is not emulated.
  if (dynamic_shared != 0) report("dynamic shared memory requested (not emulated)");
  Machine& m = machine();
  ++m.launches;
  m.threads = static_cast<int>(threads);
  if (m.fibers.size() < threads) m.fibers.resize(threads);
  m.exchange.assign(threads, 0);
  m.body = &body;
  blockDim = block;
  gridDim = grid;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = {x, y, z};
        run_block();
      }
  return true;
}

int linear_thread() { return machine().current; }
int block_threads() { return machine().threads; }

void sync_block() { wait(State::AtBlockBarrier); }

uint64_t exchange_xor(uint64_t bits, int lane_mask) {
  Machine& m = machine();
  const int self = m.current;
  m.exchange[static_cast<size_t>(self)] = bits;
  wait(State::AtWarpBarrier);  // every lane's value written
  const int partner = (self & ~(kWarp - 1)) | ((self ^ lane_mask) & (kWarp - 1));
  uint64_t got = bits;
  if (partner < m.threads) got = m.exchange[static_cast<size_t>(partner)];
  else report("__shfl_xor_sync from a lane past the block's last thread");
  wait(State::AtWarpBarrier);  // every lane's value read before the next shuffle writes
  return got;
}

void report(const std::string& what) { ++machine().violations[what]; }

std::vector<std::string> take_violations() {
  std::vector<std::string> all;
  for (const auto& [what, count] : std::exchange(machine().violations, {}))
    all.push_back(what + " (" + std::to_string(count) + " times)");
  return all;
}

int64_t launches() { return machine().launches; }

}  // namespace emu
