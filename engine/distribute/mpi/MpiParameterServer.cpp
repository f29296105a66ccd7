// The parameter servers' side of ParameterServerStrategy over MPI: each
// server rank polls for requests and answers them; the chief (rank 0) also
// declares silent workers lost, tells the other servers, and closes epochs
// (gathering every shard for evaluation and checkpoints). Protocol:
// MpiParameterProtocol.h.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "core/Clock.h"
#include "core/Error.h"
#include "distribute/mpi/MpiParameterProtocol.h"
#include "distribute/parameter_server/RemoteParameterServers.h"

namespace strata {

namespace {
using namespace mpi_ps;

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
    pending_push_.assign(w, std::nullopt);
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
      if (me_ == 0) {
        check_silent_workers();
        choose_stop_round();
      }
      // Spin briefly (a step's messages come in bursts), then yield the core
      // to the workers that share the host.
      if (monotonic_seconds() - idle_since > 0.05) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    // Answers still in flight (the last GO) must leave before we return.
    for (int i = 0; i < 1000; ++i) sends_.progress();
    if (live() < W_) skip_mpi_finalize();  // it would wait for the dead
    if (live() == 0)
      throw worker_lost("parameter_server: all " + std::to_string(W_) + " workers were lost");
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

  // Receives and drops a message that is not what its tag promises (the
  // wrong length, from a rank that may not send it, values out of range),
  // saying so once per sender: another rank's bug or a stray process must
  // not index out of bounds here or stall the loop on an unread message.
  void refuse(const MPI_Status& st, const std::string& why) {
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    std::vector<char> junk(static_cast<size_t>(std::max(count, 1)));
    MPI_Recv(junk.data(), count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    report_refused(st.MPI_SOURCE, st.MPI_TAG, why);
  }
  void report_refused(int src, int tag, const std::string& why) {
    if (refused_from_.insert(src).second)
      std::fprintf(stderr, "parameter server %d: ignored a message (tag %d) from rank %d: %s\n", me_, tag, src, why.c_str());
  }

  // The length a message of this tag must have, in its element type, and
  // whether a worker (rather than server 0) sends it; -1 for tags not ours.
  int expected_count(int tag, MPI_Datatype& type, bool& from_worker) const {
    type = MPI_INT64_T;
    from_worker = true;
    switch (tag) {
      case kPull: case kEpoch: return 2;
      case kDone: case kAlive: return 1;
      case kPush: type = MPI_DOUBLE; return kPushDoubles;
      case kGradient: type = MPI_FLOAT; return static_cast<int>(store_.shard_elements(me_));
      case kLost: case kSnapshot: from_worker = false; return 1;
      default: return -1;
    }
  }

  void handle(const MPI_Status& st) {
    const int src = st.MPI_SOURCE;
    const int w = worker_of(src);
    MPI_Datatype type;
    bool from_worker = false;
    if (const int want = expected_count(st.MPI_TAG, type, from_worker); want >= 0) {
      int count = -1;
      MPI_Get_count(&st, type, &count);
      if (count != want) return refuse(st, "expected " + std::to_string(want) + " values, got " + std::to_string(count));
      if (from_worker && (w < 0 || w >= W_)) return refuse(st, "the sender is not a worker");
      if (!from_worker && src != 0) return refuse(st, "only server 0 sends this");
    }
    if (w >= 0 && w < W_) heard_[static_cast<size_t>(w)] = monotonic_seconds();
    switch (st.MPI_TAG) {
      case kPull: {
        int64_t msg[2];
        MPI_Recv(msg, 2, MPI_INT64_T, src, kPull, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        max_pulled_ = std::max(max_pulled_, msg[0]);
        deferred_.push_back({w, msg[0]});
        waiting_[static_cast<size_t>(w)] = true;
        answer_pulls();
        break;
      }
      case kPush: {
        // The header only: its gradient is a message of its own, taken when
        // it comes (kGradient). Waiting for it here would stall every worker,
        // for ever, on one cut off between the two; a worker that sends no
        // gradient goes silent and is declared lost like any other.
        double h[kPushDoubles];
        MPI_Recv(h, kPushDoubles, MPI_DOUBLE, src, kPush, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        PendingPush p;
        if (!decode_push(h, kPushDoubles, W_, p.push, p.pulled) || p.push.worker != w)
          return report_refused(src, kPush, "a push header with values no worker sends");
        pending_push_[static_cast<size_t>(w)] = p;
        break;
      }
      case kGradient: {
        // MPI keeps one sender's messages in order, so a gradient follows
        // the header it belongs to.
        std::optional<PendingPush> p = std::exchange(pending_push_[static_cast<size_t>(w)], std::nullopt);
        if (!p) return refuse(st, "a gradient without a push header");
        std::vector<float> g(static_cast<size_t>(store_.shard_elements(me_)));
        MPI_Recv(g.data(), static_cast<int>(g.size()), MPI_FLOAT, src, kGradient, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        PushRecord& push = p->push;
        const bool sync = push.sync_slices > 0;
        // An empty slice (a tiny last batch) only advances the worker's round.
        if (push.examples > 0 || sync)
          push.updates_between = store_.push_shard(me_, g.data(), p->pulled, sync ? live() : 0, push.round);
        last_round_[static_cast<size_t>(w)] = std::max(last_round_[static_cast<size_t>(w)], push.round);
        sends_.send(std::vector<int64_t>{push.updates_between}, MPI_INT64_T, src, kAck);
        if (observer_) observer_->pushed(push);
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
        if (lost >= 0 && lost < W_) mark_lost(static_cast<int>(lost));
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
      const bool stop = round > stop_round_;
      if (!stop && o_.bound && round - 1 - mark > *o_.bound) {
        ++it;
        continue;
      }
      std::vector<float> weights(static_cast<size_t>(store_.shard_elements(me_)));
      const int64_t version = store_.read_shard(me_, weights.data());
      sends_.send(std::vector<int64_t>{version, std::min(mark, round - 1), stop ? 1 : 0}, MPI_INT64_T, rank_of(w), kHeader);
      sends_.send(std::move(weights), MPI_FLOAT, rank_of(w), kWeights);
      waiting_[static_cast<size_t>(w)] = false;
      it = deferred_.erase(it);
    }
  }

  void mark_lost(int w) {
    if (w < 0 || w >= W_ || !alive_[static_cast<size_t>(w)]) return;
    alive_[static_cast<size_t>(w)] = false;
    pending_push_[static_cast<size_t>(w)].reset();
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
      // The observer hears of the loss first: marking it lost may close the
      // epoch, and the chief must by then count the rounds the lost worker
      // left unfinished as complete (otherwise it sees "epoch ended after
      // 15 of 16 steps" and fails the run).
      if (observer_) observer_->worker_lost(w, why);
      mark_lost(w);
    }
  }

  // The chief, once a stop is requested: the highest round any worker has
  // asked for becomes the last one; every worker finishes the rounds up to
  // it and is told to stop at its next pull, so the cut is consistent.
  void choose_stop_round() {
    if (stop_round_ != INT64_MAX || !observer_ || !observer_->stop_requested()) return;
    stop_round_ = std::max(max_pulled_, o_.first_round - 1);
    answer_pulls();
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
      // What server s sends back lives on the heap and is let go when s does
      // not answer: MPI may still write into it after we give up.
      struct Answer {
        int64_t header[2] = {0, 0};
        std::vector<float> state;
      };
      auto answer = std::make_unique<Answer>();
      auto receive = [&](void* into, int count, MPI_Datatype type, int tag) {
        std::vector<MPI_Request> r(1);
        MPI_Irecv(into, count, type, s, tag, MPI_COMM_WORLD, &r[0]);
        if (wait_all(r, o_.timeout) < 0) return;
        answer.release();
        throw server_failed("parameter server " + who(c_, s) + " did not answer within " + std::to_string(int(o_.timeout)) +
                            " s when asked for its shard at the end of epoch " + std::to_string(epoch) + "; a server has died");
      };
      int64_t tell = 0;
      MPI_Send(&tell, 1, MPI_INT64_T, s, kSnapshot, MPI_COMM_WORLD);
      receive(answer->header, 2, MPI_INT64_T, kStateHeader);
      if (answer->header[1] < 0 || answer->header[1] > INT32_MAX)
        throw server_failed("parameter server " + who(c_, s) + " announced a shard of " + std::to_string(answer->header[1]) +
                            " values at the end of epoch " + std::to_string(epoch));
      answer->state.resize(static_cast<size_t>(answer->header[1]));
      receive(answer->state.data(), static_cast<int>(answer->state.size()), MPI_FLOAT, kState);
      store_.set_shard_state(s, answer->state, answer->header[0]);
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
  std::set<int> refused_from_;  // ranks whose malformed messages were reported
  std::deque<std::pair<int, int64_t>> deferred_;
  // A push header waiting for its gradient, per worker.
  struct PendingPush {
    PushRecord push;
    int64_t pulled = 0;
  };
  std::vector<std::optional<PendingPush>> pending_push_;
  int closed_epoch_ = 0;
  int64_t max_pulled_ = 0, stop_round_ = INT64_MAX;
  PendingSends sends_;
};

}  // namespace

void serve_parameters(Cluster& cluster, LocalParameterStore& store, const RemoteServerOptions& options,
                      ServerObserver* observer) {
  Server(cluster, store, options, observer).run();
}

}  // namespace strata
