#pragma once
// The ParameterServerStrategy message protocol over MPI, shared by the
// servers' loop (MpiParameterServer.cpp) and the workers' client
// (MpiParameterClient.cpp). Point-to-point messages only, so no rank ever
// waits in a collective for a worker that died.
//
// Messages (worker w = rank - servers):
//   PULL     w -> s  {round, worker}           answer HEADER {version, watermark, stop} + WEIGHTS
//                    (deferred while round - 1 - watermark > bound; the chief
//                    sets stop for rounds after the one a Stop chose)
//   PUSH     w -> s  PushWire + GRADIENT       answer ACK {updates between pull and push}
//   EPOCH    w -> 0  {epoch, worker}           answer GO {continue?, workers lost} once all live workers sent it
//   DONE     w -> s  {worker}
//   ALIVE    w -> 0  {worker}                  heartbeat while a worker waits
//   LOST     0 -> s  {worker}
//   SNAPSHOT 0 -> s  {}                        answer STATE_HEADER {version, floats} + STATE
#include <mpi.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <list>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/Clock.h"
#include "distribute/Cluster.h"
#include "distribute/parameter_server/ParameterStore.h"

namespace strata::mpi_ps {

enum Tag : int {
  kPull = 101,
  kHeader,
  kWeights,
  kPush,
  kGradient,
  kAck,
  kEpoch,
  kGo,
  kDone,
  kLost,
  kSnapshot,
  kStateHeader,
  kState,
  kAlive
};

// A push's header on the wire: a PushRecord as doubles (exact for every
// value it carries) and the version of the shard the worker pulled.
// encode_push and decode_push are the only code that reads or writes it.
struct PushWire {
  double round, worker, weight, sync, examples, round_examples, correct, loss, seconds, staleness, pulled;
};
constexpr int kPushDoubles = 11;
static_assert(sizeof(PushWire) == kPushDoubles * sizeof(double) && std::is_trivially_copyable_v<PushWire> &&
                  std::is_standard_layout_v<PushWire>,
              "PushWire must be exactly kPushDoubles doubles, copied byte for byte");

inline std::array<double, kPushDoubles> encode_push(const PushRecord& r, int64_t pulled) {
  const PushWire w{static_cast<double>(r.round),
                   static_cast<double>(r.worker),
                   r.weight,
                   r.sync_slices > 0 ? 1.0 : 0.0,
                   static_cast<double>(r.examples),
                   static_cast<double>(r.round_examples),
                   static_cast<double>(r.correct),
                   r.loss,
                   r.seconds,
                   static_cast<double>(r.staleness),
                   static_cast<double>(pulled)};
  std::array<double, kPushDoubles> out;
  std::memcpy(out.data(), &w, sizeof w);
  return out;
}

// A push header as received (`count` doubles from another rank) into `out`
// (sync_slices 1 for a synchronous push: the servers count the live
// workers) and `pulled`, or false when it is not one a worker of `workers`
// could have sent: the wrong length, a non-finite value, a count or round
// that is negative, not whole or beyond 2^53, a worker index out of range.
// Nothing received is used as an index or converted to an integer before it
// passed here.
inline bool decode_push(const double* h, int count, int workers, PushRecord& out, int64_t& pulled) {
  if (count != kPushDoubles) return false;
  for (int i = 0; i < count; ++i)
    if (!std::isfinite(h[i])) return false;
  auto whole = [](double v) { return v >= 0 && v <= 9007199254740992.0 && v == std::floor(v); };
  PushWire p;
  std::memcpy(&p, h, sizeof p);
  if (!whole(p.round) || !whole(p.worker) || !whole(p.examples) || !whole(p.round_examples) || !whole(p.correct) ||
      !whole(p.staleness) || !whole(p.pulled))
    return false;
  // A weight is a slice's share of its round (1 when asynchronous).
  if (p.worker >= workers || (p.sync != 0 && p.sync != 1) || p.weight < 0 || p.weight > 1 || p.correct > p.examples ||
      p.staleness > 2147483647.0)
    return false;
  PushRecord r;
  r.round = static_cast<int64_t>(p.round);
  r.worker = static_cast<int>(p.worker);
  r.weight = static_cast<float>(p.weight);
  r.sync_slices = p.sync != 0 ? 1 : 0;
  r.examples = static_cast<int64_t>(p.examples);
  r.round_examples = static_cast<int64_t>(p.round_examples);
  r.correct = static_cast<int64_t>(p.correct);
  r.loss = p.loss;
  r.seconds = p.seconds;
  r.staleness = static_cast<int>(p.staleness);
  out = r;
  pulled = static_cast<int64_t>(p.pulled);
  return true;
}

// Polls requests until all are done or the deadline passes; returns the
// index of one still pending on timeout, -1 when all completed. heartbeat
// (if given) runs every `every` seconds of waiting.
inline int wait_all(std::vector<MPI_Request>& reqs, double timeout, const std::function<void()>& heartbeat = {}, double every = 0) {
  const double deadline = monotonic_seconds() + timeout, spin_until = monotonic_seconds() + 0.05;
  double next_beat = monotonic_seconds() + every;
  for (;;) {
    if (heartbeat && monotonic_seconds() > next_beat) {
      heartbeat();
      next_beat = monotonic_seconds() + every;
    }
    int done = 0;
    MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return -1;
    if (monotonic_seconds() > deadline) {
      for (size_t i = 0; i < reqs.size(); ++i) {
        int flag = 0;
        MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
        if (!flag) return static_cast<int>(i);
      }
      return -1;
    }
    if (monotonic_seconds() > spin_until) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

inline std::string who(Cluster& c, int rank) {
  return "rank " + std::to_string(rank) + " (" + c.hosts()[static_cast<size_t>(rank)] + ")";
}

// Sends whose buffers must outlive the call: kept until MPI is done with them.
class PendingSends {
public:
  template <typename T>
  void send(std::vector<T> data, MPI_Datatype type, int dest, int tag) {
    auto& e = list_.emplace_back();
    e.bytes.resize(data.size() * sizeof(T));
    std::memcpy(e.bytes.data(), data.data(), e.bytes.size());
    MPI_Isend(e.bytes.data(), static_cast<int>(data.size()), type, dest, tag, MPI_COMM_WORLD, &e.request);
  }
  void progress() {
    for (auto it = list_.begin(); it != list_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? list_.erase(it) : std::next(it);
    }
  }

private:
  struct Entry {
    std::vector<char> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::list<Entry> list_;
};


}  // namespace strata::mpi_ps
