#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "distribute/Cluster.h"
#include "distribute/collectives/CrossDeviceOps.h"

namespace strata {

// NCCL all-reduce for GPU replicas, as PyTorch DDP and Horovod use it.
//
// Replicas on one GPU first sum into the lowest one's buffer through device
// memory (NCCL refuses two ranks on one GPU); that replica, the GPU's
// leader, all-reduces with the other GPUs' leaders and copies the result
// back to its GPU's other replicas. With a cluster, the communicator spans
// the leaders of every worker: rank 0 makes the unique id and MPI broadcasts
// it; MPI keeps the control traffic (losses, stop requests).
//
// Collectives run on a high-priority communication stream per GPU, ordered
// against the compute stream by events, so a bucket started during the
// backward pass overlaps it; wait_all() makes the compute stream wait.
//
// A watchdog thread (as PyTorch's ProcessGroupNCCL has) polls NCCL's
// asynchronous errors and the age of the oldest unfinished collective: past
// the collective timeout it aborts the communicators (which ends the stuck
// kernels) and, across workers, ends the job naming the rank and host, so a
// dead peer never leaves a GPU spinning forever.
class NcclAllReduce final : public CrossDeviceOps {
public:
  // Without a cluster (or a one-worker one): the GPUs of this process.
  explicit NcclAllReduce(std::shared_ptr<Cluster> cluster = nullptr);
  ~NcclAllReduce() override;
  std::string name() const override { return "nccl"; }
  int priority() const override { return 100; }
  bool enabled(const std::vector<Device>& devices, std::string* why_not) const override;
  bool preferred(const std::vector<Device>& devices) const override;
  void all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) override;
  void start_all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) override;
  void wait_all(ReplicaGroup& group, int replica) override;
  bool overlaps_compute() const override { return true; }
  // Throws the failure fail() recorded: no NCCL call may follow an abort,
  // which freed the communicators.
  void throw_if_failed() const override;
  // Aborts the communicators (fail()): a peer already inside a collective
  // that waits for the failed replica would otherwise wait for ever, since
  // a blocked call is not one the watchdog times.
  void abandon(int replica, const std::string& why) override;
  // Set by the strategy before the first collective (the watchdog reads it).
  void set_timeout(double seconds) override { timeout_ = seconds; }
  // The sharded update as grouped ncclReduce calls (each piece summed to its
  // owner's GPU) and grouped ncclBroadcast calls (each owner's updated
  // pieces to the others): the shards' pieces lie in the tensors where they
  // are, so no flat buffer or packing copy is needed, and uneven shards cost
  // nothing extra. One replica per GPU: replicas sharing a GPU would need
  // the leader's detour of all_reduce_sum.
  bool supports_sharding(const std::vector<Device>& devices, std::string* why_not) const override;
  void reduce_scatter_sum(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                          const UpdateShards& shards) override;
  void all_gather(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                  const UpdateShards& shards) override;

private:
  struct Gpu {
    int index = 0;              // CUDA device
    int leader = 0;             // the lowest replica on it
    std::vector<int> replicas;  // in replica order
    int rank = 0;               // in the communicator
    ncclComm_t comm = nullptr;
    // NCCL forbids two threads calling on one communicator at once: the
    // leader's collectives and polls, the watchdog's polls (try_lock: it
    // skips a busy one) and fail()'s abort take it.
    std::unique_ptr<std::timed_mutex> calls = std::make_unique<std::timed_mutex>();
    cudaStream_t stream = nullptr;       // communication
    cudaEvent_t ready = nullptr, done = nullptr;
    bool done_captured = false;  // `done` was last recorded while capturing: it cannot be queried
    // A step graph captured collectives on `comm`: NCCL's abort (and destroy)
    // of the process's last communicator waits until every graph holding its
    // collectives is destroyed, which a failing step's graph is not until the
    // run ends. fail() leaves such a communicator to release(), which runs
    // after the graph is gone; only one-GPU communicators are captured, and
    // they wait for no peer (NCCL versions that run a one-rank communicator's
    // collectives without a plan of their own never get here: no graph holds
    // it). Set by use(), read by fail() on another thread.
    std::unique_ptr<std::atomic<bool>> captured = std::make_unique<std::atomic<bool>>(false);
    bool comm_ended = false;  // aborted by fail(): release() leaves it alone
    // The collectives queued outside a capture and not yet seen finished,
    // oldest first, each with an event of its own, so the watchdog times
    // the oldest unfinished one (a later record of `done` would restart it).
    // A captured step's collectives are not here: its replays run no host
    // code, and an event recorded while capturing cannot be queried.
    struct Pending {
      cudaEvent_t event;
      double since;
    };
    std::deque<Pending> pending;
    std::vector<cudaEvent_t> spare;  // finished ones' events, reused
  };

  // On replica 0's thread, between barriers, at the first collective.
  void init(const ReplicaGroup& group);
  void make_gpus(const ReplicaGroup& group);  // init's streams, events and communicators
  // Destroys (finished) or aborts the communicators, then the streams and
  // events, and forgets the GPUs.
  void release(bool finished);
  // At a collective's start on every replica: creates the communicators the
  // first time; throws a failure the watchdog saw.
  void join(ReplicaGroup& group, int replica);
  // One replica per GPU: every owner's pieces as grouped calls on the GPU's
  // communication stream after its compute stream's work so far; the
  // compute stream then waits for them. `call` issues one piece's collective.
  template <typename Call>
  void grouped_pieces(int replica, const std::vector<DeviceSpan>& tensors, const UpdateShards& shards, const char* what,
                      Call&& call);
  void create_communicators();
  void create_local_communicators();  // ncclCommInitAll: one process's GPUs
  void join_workers_communicator();   // every worker's GPUs, the id broadcast over MPI
  // Records g.done on g's communication stream after its collectives just
  // queued, and times them unless the compute stream is being captured.
  // Under mutex_.
  void track(Gpu& g, cudaStream_t compute);
  // Takes the GPU's communicator for an NCCL call; throws the failure the
  // watchdog recorded, since an aborted communicator is freed. A call that
  // `compute` (when given) is capturing marks the communicator captured.
  std::unique_lock<std::timed_mutex> use(Gpu& gpu, cudaStream_t compute = nullptr) const;
  // Waits for a non-blocking communicator to finish its current operation,
  // holding `held` (the GPU's communicator) only while it asks. On an error
  // or past the timeout it fails the communicators (fail()) and throws.
  void settle(Gpu& gpu, std::unique_lock<std::timed_mutex>& held, const char* call);
  // Checks NCCL's answer to `call` made under `held`: settles one in
  // progress; a failure fails the communicators and throws, naming the GPU.
  void check(ncclResult_t result, Gpu& gpu, std::unique_lock<std::timed_mutex>& held, const char* call);
  // Across workers: refuses workers on one host that name the same GPU.
  // `most` is the largest number of GPUs a worker has.
  void refuse_shared_gpus(int most);
  std::string describe(const Gpu& gpu) const;
  void watch();
  // Records the error and aborts every communicator, which ends their
  // kernels; the replicas' next call throws the error, and across workers the
  // trainer reports it and ends the job.
  void fail(const std::string& message);

  std::shared_ptr<Cluster> cluster_;
  double timeout_ = 300;  // the cluster's, or strategy.collective_timeout (set_timeout)
  int ranks_ = 0;
  std::vector<Gpu> gpus_;
  std::vector<int> gpu_of_;  // replica -> gpus_ index
  // Written by replica 0 between barriers; read by a failing replica (abandon).
  std::atomic<bool> initialized_{false};

  mutable std::mutex mutex_;  // pending, error_, the events' records and the watchdog's queries
  std::string error_;
  std::atomic<bool> aborted_{false};  // set by fail() (the run failed) before it aborts the communicators
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread watchdog_;
};

}  // namespace strata
