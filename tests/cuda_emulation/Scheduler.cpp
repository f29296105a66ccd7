// The fiber scheduler behind Scheduler.h. A block's fibers run in turn until
// each waits at a barrier or has returned; then the barrier that every live
// thread of its scope (a warp, the block) waits at opens. After each block
// barrier the threads run in a new order (a fixed-seed shuffle: the same on
// every run), so a kernel that reads shared memory another thread writes
// without a barrier between sees its write too early or too late, and fails.
//
// Switching. A fiber is entered once and then lives on, running the body
// once per block in a loop (no getcontext/makecontext per block). glibc's
// swapcontext sets the signal mask by a system call at every switch: 41 of
// this test's 87 s were in the kernel. So a switch is the compiler's
// __builtin_setjmp/__builtin_longjmp, which keep only the stack and frame
// pointers and the resume address (the compiler saves every other register
// in the frame around the setjmp): 4.3 s. Under ASan it stays swapcontext,
// which ASan intercepts: with the builtins, ASan's build of this test ran
// 21-24 s against 14.5-14.8 s (test_cuda_emulation_small_grids), for a reason
// not found.
#include "Scheduler.h"

#include <ucontext.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_EMU_SWAPCONTEXT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_EMU_SWAPCONTEXT 1
#endif
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace emu {

namespace {

constexpr int kWarp = 32;
constexpr int kMaxThreads = 1024;
// The kernels' frames are small; libm's and the lambdas' add little.
constexpr size_t kStackBytes = size_t{128} << 10;

enum class State { Ready, AtBlockBarrier, AtWarpBarrier, Done };

// Where a fiber or the scheduler goes on.
#ifdef STRATA_EMU_SWAPCONTEXT
struct Context {
  ucontext_t uc{};
};
void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#else
struct Context {
  void* buf[5]{};  // __builtin_setjmp's buffer
};
// GCC's documentation has __builtin_longjmp in another function than the
// __builtin_setjmp it pairs with. Neither is [[noreturn]], which would have
// the sanitizers handle a no-return call at every switch.
__attribute__((noinline)) void jump_to(Context& to) { __builtin_longjmp(to.buf, 1); }
__attribute__((noinline)) void switch_context(Context& from, Context& to) {
  if (__builtin_setjmp(from.buf) == 0) jump_to(to);
}
#endif

struct Fiber {
  Context context;       // valid once started
  bool started = false;  // entered; false again when its block was abandoned mid-body
  State state = State::Done;
  std::unique_ptr<char[]> stack;  // uninitialised: only the pages a thread touches are committed
};

struct Machine {
  std::vector<std::unique_ptr<Fiber>> fibers;  // by linear thread index; never moved (their contexts)
  std::vector<uint64_t> exchange;              // one shuffle slot per thread
  Context scheduler;                           // where resume() goes on when the running fiber yields
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

Fiber& fiber(int i) { return *machine().fibers[static_cast<size_t>(i)]; }

// Back to the scheduler until it resumes this fiber.
void wait(State s) {
  Machine& m = machine();
  Fiber& f = fiber(m.current);
  f.state = s;
  switch_context(f.context, m.scheduler);
}

// A fiber's whole life: the body once per block it runs in.
void fiber_main() {
  for (;;) {
    (*machine().body)();
    wait(State::Done);
  }
}

// Enters fiber f for the first time (or afresh after an abandoned block): a
// new frame of fiber_main at its stack's top. The only switch that costs a
// system call outside ASan.
void start(Fiber& f) {
  Machine& m = machine();
  ucontext_t entry{};
  getcontext(&entry);
  entry.uc_stack.ss_sp = f.stack.get();
  entry.uc_stack.ss_size = kStackBytes;
  entry.uc_link = nullptr;  // fiber_main never returns
  makecontext(&entry, fiber_main, 0);
  f.started = true;
#ifdef STRATA_EMU_SWAPCONTEXT
  swapcontext(&m.scheduler.uc, &entry);
#else
  ucontext_t left{};  // never resumed: the fiber comes back through m.scheduler
  if (__builtin_setjmp(m.scheduler.buf) == 0) swapcontext(&left, &entry);
#endif
}

void resume(int i) {
  Machine& m = machine();
  m.current = i;
  const auto u = static_cast<unsigned>(i);
  threadIdx = {u % blockDim.x, u / blockDim.x % blockDim.y, u / (blockDim.x * blockDim.y)};
  Fiber& f = fiber(i);
  if (f.started) switch_context(m.scheduler, f.context);
  else start(f);
}

// Opens the barriers every live thread of a warp waits at; true if any.
bool release_warps() {
  Machine& m = machine();
  bool released = false;
  for (int w = 0; w < m.threads; w += kWarp) {
    const int end = std::min(m.threads, w + kWarp);
    int waiting = 0, done = 0;
    for (int i = w; i < end; ++i) {
      waiting += fiber(i).state == State::AtWarpBarrier;
      done += fiber(i).state == State::Done;
    }
    if (waiting == 0 || waiting + done != end - w) continue;
    if (done > 0) report("__shfl_xor_sync with the full mask while lanes of the warp have exited");
    for (int i = w; i < end; ++i)
      if (fiber(i).state == State::AtWarpBarrier) fiber(i).state = State::Ready;
    released = true;
  }
  return released;
}

// Runs one block's threads to their end.
void run_block() {
  Machine& m = machine();
  for (int i = 0; i < m.threads; ++i) {
    Fiber& f = fiber(i);
    if (!f.stack) f.stack.reset(new char[kStackBytes]);
    f.state = State::Ready;  // a started fiber runs the body again from its top
  }
  m.order.resize(static_cast<size_t>(m.threads));
  std::iota(m.order.begin(), m.order.end(), 0);
  for (;;) {
    for (int i : m.order)
      if (fiber(i).state == State::Ready) resume(i);
    if (release_warps()) continue;
    int at_block = 0, done = 0;
    for (int i = 0; i < m.threads; ++i) {
      at_block += fiber(i).state == State::AtBlockBarrier;
      done += fiber(i).state == State::Done;
    }
    if (done == m.threads) return;
    if (at_block + done != m.threads) {
      // Abandoned: the fibers stuck mid-body start afresh in the next block.
      report("deadlock: lanes of a warp wait at a shuffle while others wait at __syncthreads");
      for (int i = 0; i < m.threads; ++i)
        if (fiber(i).state != State::Done) fiber(i).started = false;
      return;
    }
    // On a GPU this hangs or is undefined; here it goes on, reported.
    if (done > 0) report("__syncthreads reached by some threads of a block after others exited");
    for (int i = 0; i < m.threads; ++i)
      if (fiber(i).state == State::AtBlockBarrier) fiber(i).state = State::Ready;
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
  while (m.fibers.size() < threads) m.fibers.push_back(std::make_unique<Fiber>());
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
