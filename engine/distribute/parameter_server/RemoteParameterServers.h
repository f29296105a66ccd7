#pragma once
// ParameterServerStrategy across processes (mpirun): ranks [0, servers)
// serve one shard each, the other ranks are workers (worker w = rank -
// servers). Every rank builds the same model and LocalParameterStore (the
// layout); a server keeps only its own shard current, a worker uses the
// layout to scatter pulled weights into its model. Implemented over MPI in
// mpi/MpiParameterServer.cpp and mpi/MpiParameterClient.cpp (protocol in
// mpi/MpiParameterProtocol.h); without MPI these say so.
#include <memory>
#include <optional>
#include <string>

#include "distribute/Cluster.h"
#include "distribute/parameter_server/LocalParameterStore.h"

namespace strata {

struct RemoteServerOptions {
  int servers = 1;
  std::optional<int> bound;  // staleness bound; nullopt = unbounded
  double timeout = 300;      // seconds without an answer before a peer counts as dead
  int64_t first_round = 1;   // rounds are global steps (a resumed run starts later)
  int first_epoch = 1;       // the epoch the workers begin with
  // Fault injection (tests, demonstrations): this worker's process dies
  // (SIGKILL) in its push number `die_in_push`, after a push header has left
  // and before its gradient, the moment that must not stall the servers.
  int64_t die_in_push = 0;
};

// What the chief server (rank 0) tells the trainer while it serves.
class ServerObserver {
public:
  virtual ~ServerObserver() = default;
  // A worker's push was applied (updates_between set).
  virtual void pushed(const PushRecord& push) = 0;
  virtual void worker_lost(int worker, const std::string& reason) = 0;
  // Every live worker finished `epoch` (or stopped early, when a stop was
  // requested), and the chief's store now holds every server's shard
  // (weights and optimizer state). false ends the training.
  virtual bool epoch_finished(int epoch) = 0;
  // Polled while serving: true asks the workers to stop at a common round.
  virtual bool stop_requested() = 0;
};

// Serves this rank's shard until every worker has finished or been lost.
// observer is given on rank 0 only. Throws when every worker is lost or
// another server does not answer.
void serve_parameters(Cluster& cluster, LocalParameterStore& store, const RemoteServerOptions& options,
                      ServerObserver* observer);

// A worker's view of the servers.
class RemoteParameterStore : public ParameterStore {
public:
  // Staleness of the last pull: rounds before it whose updates were not all
  // applied when the servers answered (<= the bound).
  virtual int last_staleness() const = 0;
  // True once the chief answered a pull with "stop": training was stopped,
  // every round before the pulled one is complete, the pulled one is not to
  // be computed.
  virtual bool stopping() const = 0;
  // Tells the chief this worker finished `epoch` and waits until it has
  // evaluated; false means training ends here.
  virtual bool finish_epoch(int epoch) = 0;
  // No more pushes from this worker.
  virtual void finish() = 0;
};

std::unique_ptr<RemoteParameterStore> connect_parameter_servers(Cluster& cluster, LocalParameterStore& layout,
                                                                const RemoteServerOptions& options);

}  // namespace strata
