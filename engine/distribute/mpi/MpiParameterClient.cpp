// The workers' side of ParameterServerStrategy over MPI: pull the shards,
// push gradients, say when an epoch is done; every wait has a deadline and
// sends heartbeats to the chief. Protocol: MpiParameterProtocol.h.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <deque>
#include <thread>

#include "core/Clock.h"
#include "core/Error.h"
#include "distribute/collectives/HostGradients.h"
#include "distribute/mpi/MpiParameterProtocol.h"
#include "distribute/parameter_server/RemoteParameterServers.h"

namespace strata {

namespace {
using namespace mpi_ps;

class Client final : public RemoteParameterStore {
public:
  Client(Cluster& c, LocalParameterStore& layout, const RemoteServerOptions& o)
      : c_(c), layout_(layout), o_(o), worker_(c.rank() - o.servers) {}

  const ShardPlan& plan() const override { return layout_.plan(); }
  std::vector<ServerStats> stats() const override { return {}; }
  int last_staleness() const override { return staleness_; }
  bool stopping() const override { return stopping_; }

  std::vector<int64_t> pull(int component, int64_t round) override {
    const int S = o_.servers;
    std::vector<std::array<int64_t, 3>> headers(static_cast<size_t>(S));
    std::vector<std::vector<float>> data(static_cast<size_t>(S));
    std::vector<MPI_Request> reqs;
    const int64_t msg[2] = {round, worker_};
    for (int s = 0; s < S; ++s) {
      data[static_cast<size_t>(s)].resize(static_cast<size_t>(layout_.shard_elements(s)));
      reqs.emplace_back();
      MPI_Irecv(headers[static_cast<size_t>(s)].data(), 3, MPI_INT64_T, s, kHeader, MPI_COMM_WORLD, &reqs.back());
      reqs.emplace_back();
      MPI_Irecv(data[static_cast<size_t>(s)].data(), static_cast<int>(data[static_cast<size_t>(s)].size()), MPI_FLOAT, s,
                kWeights, MPI_COMM_WORLD, &reqs.back());
      MPI_Send(msg, 2, MPI_INT64_T, s, kPull, MPI_COMM_WORLD);
    }
    // A bounded pull may wait for the slowest worker: that is the bound
    // working. That worker may itself have died, which the chief learns only
    // after the timeout and only then lets this pull go ahead; with the same
    // deadline here, this worker gave up in the same instant (all ranks then
    // failed, "all workers were lost"). So a pull waits twice the timeout
    // before it calls a server dead.
    if (int late = wait(reqs, 2 * o_.timeout); late >= 0)
      throw server_failed(timeout_message(late / 2, 2 * o_.timeout, "weights for round " + std::to_string(round)));
    std::vector<int64_t> versions;
    int64_t mark = INT64_MAX;
    for (int s = 0; s < S; ++s) {
      layout_.unpack_to_model(s, data[static_cast<size_t>(s)].data(), component);
      versions.push_back(headers[static_cast<size_t>(s)][0]);
      mark = std::min(mark, headers[static_cast<size_t>(s)][1]);
    }
    staleness_ = static_cast<int>(std::max<int64_t>(0, round - 1 - mark));
    stopping_ = headers[0][2] != 0;  // the chief (server 0) decides
    return versions;
  }

  int64_t push(const std::vector<Tensor>& worker_grads, const std::vector<int64_t>& pulled, const PushRecord& m) override {
    const int S = o_.servers;
    // MPI sends host memory: gradients on a device come to the host first
    // (one wait, through pinned memory).
    const std::vector<const float*>& grads = host_.gather(worker_grads);
    std::vector<std::vector<float>> packed(static_cast<size_t>(S));
    std::vector<std::array<double, kPushDoubles>> headers(static_cast<size_t>(S));
    std::vector<int64_t> acks(static_cast<size_t>(S), 0);
    std::vector<MPI_Request> sends, recvs;
    for (int s = 0; s < S; ++s) {
      auto& p = packed[static_cast<size_t>(s)];
      p.resize(static_cast<size_t>(layout_.shard_elements(s)));
      if (m.examples > 0) layout_.pack(s, grads, m.weight, p.data());
      headers[static_cast<size_t>(s)] = encode_push(m, pulled[static_cast<size_t>(s)]);
      recvs.emplace_back();
      MPI_Irecv(&acks[static_cast<size_t>(s)], 1, MPI_INT64_T, s, kAck, MPI_COMM_WORLD, &recvs.back());
      sends.emplace_back();
      MPI_Isend(headers[static_cast<size_t>(s)].data(), kPushDoubles, MPI_DOUBLE, s, kPush, MPI_COMM_WORLD, &sends.back());
      if (o_.die_in_push > 0 && pushes_ + 1 == o_.die_in_push) {
        MPI_Wait(&sends.back(), MPI_STATUS_IGNORE);  // the header is out; the gradient never follows
        std::raise(SIGKILL);
      }
      sends.emplace_back();
      MPI_Isend(p.data(), static_cast<int>(p.size()), MPI_FLOAT, s, kGradient, MPI_COMM_WORLD, &sends.back());
    }
    if (int late = wait(sends, o_.timeout); late >= 0)
      throw server_failed(timeout_message(late / 2, o_.timeout, "the gradients of round " + std::to_string(m.round)));
    if (int late = wait(recvs, o_.timeout); late >= 0)
      throw server_failed(timeout_message(late, o_.timeout, "the gradients of round " + std::to_string(m.round)));
    ++pushes_;
    return *std::max_element(acks.begin(), acks.end());
  }

  bool finish_epoch(int epoch) override {
    const int64_t msg[2] = {epoch, worker_};
    int64_t go[2] = {0, 0};  // continue?, workers lost so far
    std::vector<MPI_Request> r(1);
    MPI_Irecv(go, 2, MPI_INT64_T, 0, kGo, MPI_COMM_WORLD, &r[0]);
    MPI_Send(msg, 2, MPI_INT64_T, 0, kEpoch, MPI_COMM_WORLD);
    // The epoch closes when every live worker is done; a worker that died
    // in its last rounds is declared lost only after the timeout, so, as for
    // a bounded pull, wait twice the timeout before calling the chief dead.
    if (wait(r, 2 * o_.timeout) >= 0)
      throw server_failed(timeout_message(0, 2 * o_.timeout, "the end of epoch " + std::to_string(epoch)));
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
  int wait(std::vector<MPI_Request>& reqs, double timeout) {
    const int64_t me = worker_;
    return wait_all(reqs, timeout, [&] { MPI_Send(&me, 1, MPI_INT64_T, 0, kAlive, MPI_COMM_WORLD); },
                    std::max(0.05, o_.timeout / 4));
  }

  std::string timeout_message(int server, double seconds, const std::string& what) const {
    return "parameter server " + who(c_, server) + " did not answer within " + std::to_string(static_cast<int>(seconds)) +
           " s (" + what + "); a server has died or hangs";
  }

  Cluster& c_;
  LocalParameterStore& layout_;
  RemoteServerOptions o_;
  int worker_;
  int staleness_ = 0;
  bool stopping_ = false;
  int64_t pushes_ = 0;
  HostGradients host_;  // this worker's gradients on the host for MPI
};

}  // namespace

std::unique_ptr<RemoteParameterStore> connect_parameter_servers(Cluster& cluster, LocalParameterStore& layout,
                                                                const RemoteServerOptions& options) {
  return std::make_unique<Client>(cluster, layout, options);
}

}  // namespace strata
