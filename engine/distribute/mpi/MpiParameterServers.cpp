// ParameterServerStrategy over MPI: the servers' message loop and the
// workers' client. Point-to-point messages only, so no rank ever waits in a
// collective for a worker that died: servers poll for requests, workers wait
// for answers against a deadline, and the chief server (rank 0) declares a
// silent worker lost and tells the other servers.
//
// Messages (worker w = rank - servers):
//   PULL     w -> s  {round, worker}           answer HEADER {version, watermark} + WEIGHTS
//                    (deferred while round - 1 - watermark > bound)
//   PUSH     w -> s  PushHeader + GRADIENT     answer ACK {updates between pull and push}
//   EPOCH    w -> 0  {epoch, worker}           answer GO {1 continue, 0 stop} once all live workers sent it
//   DONE     w -> s  {worker}
//   LOST     0 -> s  {worker}
//   SNAPSHOT 0 -> s  {}                        answer STATE_HEADER {version, floats} + STATE
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <cstdio>
#include <deque>
#include <functional>
#include <list>
#include <thread>

#include "core/Clock.h"
#include "core/Error.h"
#include "distribute/RemoteParameterServers.h"

namespace strata {

namespace {

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

// The header of a push, as doubles (exact for every value it carries).
struct PushHeader {
  double round, worker, weight, sync, examples, round_examples, correct, loss, seconds, staleness, pulled;
  static constexpr int kCount = 11;
};

// Polls requests until all are done or the deadline passes; returns the
// index of one still pending on timeout, -1 when all completed. heartbeat
// (if given) runs every `every` seconds of waiting.
int wait_all(std::vector<MPI_Request>& reqs, double timeout, const std::function<void()>& heartbeat = {}, double every = 0) {
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

std::string who(Cluster& c, int rank) {
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

class Server {
public:
  Server(Cluster& c, LocalParameterStore& store, const RemoteServerOptions& o, ServerObserver* observer)
      : c_(c), store_(store), o_(o), observer_(observer), me_(c.rank()), W_(c.size() - o.servers) {
    const size_t w = static_cast<size_t>(W_);
    last_round_.assign(w, o.first_round - 1);
    alive_.assign(w, true);
    done_.assign(w, false);
    waiting_.assign(w, false);
    epoch_done_.assign(w, 0);
    heard_.assign(w, monotonic_seconds());
    closed_epoch_ = o.first_epoch - 1;
  }

  void run() {
    double idle_since = monotonic_seconds();
    while (!finished()) {
      sends_.progress();
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
      if (flag) {
        handle(st);
        idle_since = monotonic_seconds();
        continue;
      }
      if (me_ == 0) check_silent_workers();
      // Spin briefly (a step's messages come in bursts), then yield the core
      // to the workers that share the host.
      if (monotonic_seconds() - idle_since > 0.05) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    // Answers still in flight (the last GO) must leave before we return.
    for (int i = 0; i < 1000; ++i) sends_.progress();
    if (live() < W_) skip_mpi_finalize();  // it would wait for the dead
    if (live() == 0)
      throw runtime_error("parameter_server: all " + std::to_string(W_) + " workers were lost");
  }

private:
  int worker_of(int rank) const { return rank - o_.servers; }
  int rank_of(int worker) const { return worker + o_.servers; }
  bool finished() const {
    for (int w = 0; w < W_; ++w)
      if (alive_[static_cast<size_t>(w)] && !done_[static_cast<size_t>(w)]) return false;
    return true;
  }
  int live() const { return static_cast<int>(std::count(alive_.begin(), alive_.end(), true)); }
  int64_t watermark() const {
    int64_t m = INT64_MAX;
    for (int w = 0; w < W_; ++w)
      if (alive_[static_cast<size_t>(w)] && !done_[static_cast<size_t>(w)]) m = std::min(m, last_round_[static_cast<size_t>(w)]);
    return m == INT64_MAX ? INT64_MAX / 2 : m;
  }

  void handle(const MPI_Status& st) {
    const int src = st.MPI_SOURCE;
    const int w = worker_of(src);
    if (w >= 0) heard_[static_cast<size_t>(w)] = monotonic_seconds();
    switch (st.MPI_TAG) {
      case kPull: {
        int64_t msg[2];
        MPI_Recv(msg, 2, MPI_INT64_T, src, kPull, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        deferred_.push_back({w, msg[0]});
        waiting_[static_cast<size_t>(w)] = true;
        answer_pulls();
        break;
      }
      case kPush: {
        double h[PushHeader::kCount];
        MPI_Recv(h, PushHeader::kCount, MPI_DOUBLE, src, kPush, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        std::vector<float> g(static_cast<size_t>(store_.shard_elements(me_)));
        MPI_Recv(g.data(), static_cast<int>(g.size()), MPI_FLOAT, src, kGradient, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const PushHeader& ph = *reinterpret_cast<const PushHeader*>(h);
        const bool sync = ph.sync != 0;
        int64_t between = 0;
        // An empty slice (a tiny last batch) only advances the worker's round.
        if (ph.examples > 0 || sync)
          between = store_.push_shard(me_, g.data(), static_cast<int64_t>(ph.pulled), sync ? live() : 0);
        last_round_[static_cast<size_t>(w)] = std::max(last_round_[static_cast<size_t>(w)], static_cast<int64_t>(ph.round));
        sends_.send(std::vector<int64_t>{between}, MPI_INT64_T, src, kAck);
        if (observer_) {
          PushMeta m;
          m.round = static_cast<int64_t>(ph.round);
          m.worker = w;
          m.examples = static_cast<int64_t>(ph.examples);
          m.round_examples = static_cast<int64_t>(ph.round_examples);
          m.correct = static_cast<int64_t>(ph.correct);
          m.loss = ph.loss;
          m.seconds = ph.seconds;
          m.staleness = static_cast<int>(ph.staleness);
          observer_->pushed(m, between);
        }
        answer_pulls();
        break;
      }
      case kEpoch: {
        int64_t msg[2];
        MPI_Recv(msg, 2, MPI_INT64_T, src, kEpoch, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        epoch_done_[static_cast<size_t>(w)] = static_cast<int>(msg[0]);
        waiting_[static_cast<size_t>(w)] = true;
        close_epoch_if_ready();
        break;
      }
      case kDone: {
        int64_t msg;
        MPI_Recv(&msg, 1, MPI_INT64_T, src, kDone, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        done_[static_cast<size_t>(w)] = true;
        answer_pulls();
        break;
      }
      case kLost: {
        int64_t lost;
        MPI_Recv(&lost, 1, MPI_INT64_T, src, kLost, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        mark_lost(static_cast<int>(lost));
        break;
      }
      case kAlive: {
        int64_t msg;
        MPI_Recv(&msg, 1, MPI_INT64_T, src, kAlive, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
      }
      case kSnapshot: {
        int64_t msg;
        MPI_Recv(&msg, 1, MPI_INT64_T, src, kSnapshot, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        std::vector<float> state = store_.shard_state(me_);
        sends_.send(std::vector<int64_t>{store_.version(me_), static_cast<int64_t>(state.size())}, MPI_INT64_T, src, kStateHeader);
        sends_.send(std::move(state), MPI_FLOAT, src, kState);
        break;
      }
      default: {
        // Not ours: drain it so the loop cannot spin on it.
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        std::vector<char> junk(static_cast<size_t>(std::max(count, 1)));
        MPI_Recv(junk.data(), count, MPI_BYTE, src, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    }
  }

  // Stale-synchronous parallel: a pull for round t waits until every live
  // worker has pushed round t - 1 - k.
  void answer_pulls() {
    const int64_t mark = watermark();
    for (auto it = deferred_.begin(); it != deferred_.end();) {
      const auto [w, round] = *it;
      if (!alive_[static_cast<size_t>(w)]) {
        it = deferred_.erase(it);
        continue;
      }
      if (o_.bound && round - 1 - mark > *o_.bound) {
        ++it;
        continue;
      }
      std::vector<float> weights(static_cast<size_t>(store_.shard_elements(me_)));
      const int64_t version = store_.read_shard(me_, weights.data());
      sends_.send(std::vector<int64_t>{version, std::min(mark, round - 1)}, MPI_INT64_T, rank_of(w), kHeader);
      sends_.send(std::move(weights), MPI_FLOAT, rank_of(w), kWeights);
      waiting_[static_cast<size_t>(w)] = false;
      it = deferred_.erase(it);
    }
  }

  void mark_lost(int w) {
    if (w < 0 || w >= W_ || !alive_[static_cast<size_t>(w)]) return;
    alive_[static_cast<size_t>(w)] = false;
    // A synchronous round waiting for the lost worker's slice goes ahead
    // with the slices it has.
    if (o_.bound == 0) store_.finish_sync_round(me_, live());
    answer_pulls();
    if (me_ == 0) close_epoch_if_ready();
  }

  // The chief: a live worker that neither answers nor waits on us for
  // longer than the timeout has died.
  void check_silent_workers() {
    const double now = monotonic_seconds();
    for (int w = 0; w < W_; ++w) {
      const size_t i = static_cast<size_t>(w);
      if (!alive_[i] || done_[i] || waiting_[i] || now - heard_[i] < o_.timeout) continue;
      char why[256];
      std::snprintf(why, sizeof why, "%s sent nothing for %.0f s (the process died or hangs)", who(c_, rank_of(w)).c_str(),
                    now - heard_[i]);
      for (int s = 1; s < o_.servers; ++s) sends_.send(std::vector<int64_t>{w}, MPI_INT64_T, s, kLost);
      mark_lost(w);
      if (observer_) observer_->worker_lost(w, why);
    }
  }

  void close_epoch_if_ready() {
    const int epoch = closed_epoch_ + 1;
    for (int w = 0; w < W_; ++w)
      if (alive_[static_cast<size_t>(w)] && epoch_done_[static_cast<size_t>(w)] < epoch) return;
    if (live() == 0) return;
    closed_epoch_ = epoch;
    // Every live worker's pushes were acknowledged before it said the epoch
    // was done, so every server has applied them: gather their shards.
    for (int s = 1; s < o_.servers; ++s) {
      std::vector<MPI_Request> r(1);
      int64_t tell = 0, header[2] = {0, 0};
      MPI_Send(&tell, 1, MPI_INT64_T, s, kSnapshot, MPI_COMM_WORLD);
      MPI_Irecv(header, 2, MPI_INT64_T, s, kStateHeader, MPI_COMM_WORLD, &r[0]);
      if (wait_all(r, o_.timeout) >= 0)
        throw runtime_error("parameter server " + who(c_, s) + " did not answer within " + std::to_string(int(o_.timeout)) +
                            " s when asked for its shard at the end of epoch " + std::to_string(epoch) + "; a server has died");
      std::vector<float> state(static_cast<size_t>(header[1]));
      MPI_Recv(state.data(), static_cast<int>(state.size()), MPI_FLOAT, s, kState, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      store_.set_shard_state(s, state, header[0]);
    }
    const bool go = observer_ ? observer_->epoch_finished(epoch) : true;
    for (int w = 0; w < W_; ++w)
      if (alive_[static_cast<size_t>(w)]) {
        sends_.send(std::vector<int64_t>{go ? 1 : 0, W_ - live()}, MPI_INT64_T, rank_of(w), kGo);
        waiting_[static_cast<size_t>(w)] = false;
        heard_[static_cast<size_t>(w)] = monotonic_seconds();
      }
  }

  Cluster& c_;
  LocalParameterStore& store_;
  RemoteServerOptions o_;
  ServerObserver* observer_;
  int me_, W_;
  std::vector<int64_t> last_round_;
  std::vector<bool> alive_, done_, waiting_;
  std::vector<int> epoch_done_;
  std::vector<double> heard_;
  std::deque<std::pair<int, int64_t>> deferred_;
  int closed_epoch_ = 0;
  PendingSends sends_;
};

class Client final : public RemoteParameterStore {
public:
  Client(Cluster& c, LocalParameterStore& layout, const RemoteServerOptions& o)
      : c_(c), layout_(layout), o_(o), worker_(c.rank() - o.servers) {}

  const ShardPlan& plan() const override { return layout_.plan(); }
  std::vector<ServerStats> stats() const override { return {}; }
  int last_staleness() const override { return staleness_; }

  std::vector<int64_t> pull(int component, int64_t round) override {
    const int S = o_.servers;
    std::vector<std::array<int64_t, 2>> headers(static_cast<size_t>(S));
    std::vector<std::vector<float>> data(static_cast<size_t>(S));
    std::vector<MPI_Request> reqs;
    const int64_t msg[2] = {round, worker_};
    for (int s = 0; s < S; ++s) {
      data[static_cast<size_t>(s)].resize(static_cast<size_t>(layout_.shard_elements(s)));
      reqs.emplace_back();
      MPI_Irecv(headers[static_cast<size_t>(s)].data(), 2, MPI_INT64_T, s, kHeader, MPI_COMM_WORLD, &reqs.back());
      reqs.emplace_back();
      MPI_Irecv(data[static_cast<size_t>(s)].data(), static_cast<int>(data[static_cast<size_t>(s)].size()), MPI_FLOAT, s,
                kWeights, MPI_COMM_WORLD, &reqs.back());
      MPI_Send(msg, 2, MPI_INT64_T, s, kPull, MPI_COMM_WORLD);
    }
    // A bounded pull may wait for the slowest worker: that is the bound
    // working, so the deadline is the full timeout.
    if (int late = wait(reqs); late >= 0)
      throw runtime_error(timeout_message(late / 2, "weights for round " + std::to_string(round)));
    std::vector<int64_t> versions;
    int64_t mark = INT64_MAX;
    for (int s = 0; s < S; ++s) {
      layout_.unpack_to_model(s, data[static_cast<size_t>(s)].data(), component);
      versions.push_back(headers[static_cast<size_t>(s)][0]);
      mark = std::min(mark, headers[static_cast<size_t>(s)][1]);
    }
    staleness_ = static_cast<int>(std::max<int64_t>(0, round - 1 - mark));
    return versions;
  }

  int64_t push(const std::vector<Tensor>& grads, const std::vector<int64_t>& pulled, const PushMeta& m) override {
    const int S = o_.servers;
    std::vector<std::vector<float>> packed(static_cast<size_t>(S));
    std::vector<std::array<double, PushHeader::kCount>> headers(static_cast<size_t>(S));
    std::vector<int64_t> acks(static_cast<size_t>(S), 0);
    std::vector<MPI_Request> sends, recvs;
    for (int s = 0; s < S; ++s) {
      auto& p = packed[static_cast<size_t>(s)];
      p.resize(static_cast<size_t>(layout_.shard_elements(s)));
      if (m.examples > 0) layout_.pack(s, grads, m.weight, p.data());
      headers[static_cast<size_t>(s)] = {static_cast<double>(m.round), static_cast<double>(worker_), m.weight,
                                         m.sync_slices > 0 ? 1.0 : 0.0, static_cast<double>(m.examples),
                                         static_cast<double>(m.round_examples), static_cast<double>(m.correct), m.loss,
                                         m.seconds, static_cast<double>(m.staleness),
                                         static_cast<double>(pulled[static_cast<size_t>(s)])};
      recvs.emplace_back();
      MPI_Irecv(&acks[static_cast<size_t>(s)], 1, MPI_INT64_T, s, kAck, MPI_COMM_WORLD, &recvs.back());
      sends.emplace_back();
      MPI_Isend(headers[static_cast<size_t>(s)].data(), PushHeader::kCount, MPI_DOUBLE, s, kPush, MPI_COMM_WORLD, &sends.back());
      sends.emplace_back();
      MPI_Isend(p.data(), static_cast<int>(p.size()), MPI_FLOAT, s, kGradient, MPI_COMM_WORLD, &sends.back());
    }
    if (int late = wait(sends); late >= 0)
      throw runtime_error(timeout_message(late / 2, "the gradients of round " + std::to_string(m.round)));
    if (int late = wait(recvs); late >= 0)
      throw runtime_error(timeout_message(late, "the gradients of round " + std::to_string(m.round)));
    return *std::max_element(acks.begin(), acks.end());
  }

  bool finish_epoch(int epoch) override {
    const int64_t msg[2] = {epoch, worker_};
    int64_t go[2] = {0, 0};  // continue?, workers lost so far
    std::vector<MPI_Request> r(1);
    MPI_Irecv(go, 2, MPI_INT64_T, 0, kGo, MPI_COMM_WORLD, &r[0]);
    MPI_Send(msg, 2, MPI_INT64_T, 0, kEpoch, MPI_COMM_WORLD);
    if (wait(r) >= 0) throw runtime_error(timeout_message(0, "the end of epoch " + std::to_string(epoch)));
    if (go[1] > 0) skip_mpi_finalize();  // MPI_Finalize would wait for the dead
    return go[0] != 0;
  }

  void finish() override {
    const int64_t msg = worker_;
    for (int s = 0; s < o_.servers; ++s) MPI_Send(&msg, 1, MPI_INT64_T, s, kDone, MPI_COMM_WORLD);
  }

private:
  // While it waits (for a bounded pull, a slow server, the chief's
  // evaluation) the worker tells the chief it is alive, so only a dead or
  // hung worker goes silent.
  int wait(std::vector<MPI_Request>& reqs) {
    const int64_t me = worker_;
    return wait_all(reqs, o_.timeout, [&] { MPI_Send(&me, 1, MPI_INT64_T, 0, kAlive, MPI_COMM_WORLD); },
                    std::max(0.05, o_.timeout / 4));
  }

  std::string timeout_message(int server, const std::string& what) const {
    return "parameter server " + who(c_, server) + " did not answer within " + std::to_string(static_cast<int>(o_.timeout)) +
           " s (" + what + "); a server has died or hangs";
  }

  Cluster& c_;
  LocalParameterStore& layout_;
  RemoteServerOptions o_;
  int worker_;
  int staleness_ = 0;
};

}  // namespace

void serve_parameters(Cluster& cluster, LocalParameterStore& store, const RemoteServerOptions& options,
                      ServerObserver* observer) {
  Server(cluster, store, options, observer).run();
}

std::unique_ptr<RemoteParameterStore> connect_parameter_servers(Cluster& cluster, LocalParameterStore& layout,
                                                                const RemoteServerOptions& options) {
  return std::make_unique<Client>(cluster, layout, options);
}

}  // namespace strata
