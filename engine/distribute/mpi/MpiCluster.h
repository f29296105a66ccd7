#pragma once
#include "distribute/Cluster.h"

namespace strata {

// The ranks of MPI_COMM_WORLD as workers. MPI is initialised with
// MPI_THREAD_SERIALIZED: only the trainer's thread, which also runs replica
// 0's work in a step, calls MPI. Collectives are the
// non-blocking forms polled against a deadline, so a dead or hung rank ends
// the run with a message instead of an endless wait.
class MpiCluster final : public Cluster {
public:
  explicit MpiCluster(double timeout_seconds);
  ~MpiCluster() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  std::string host() const override { return host_; }
  std::vector<std::string> hosts() const override { return hosts_; }
  std::string transport() const override { return "mpi"; }
  void all_reduce_sum(std::span<float> data) override;
  std::vector<double> all_gather(const std::vector<double>& mine) override;
  void broadcast(std::span<std::byte> data, int root) override;
  double timeout_seconds() const override { return timeout_; }
  [[noreturn]] void abort(int code, const std::string& message) override;

private:
  // Polls a request until done or the deadline; on timeout throws a
  // worker_lost error naming `what` and the peers' hosts.
  void wait(void* request, const std::string& what);
  // The hosts of the other ranks, for a timeout's message.
  std::string peer_hosts() const;

  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
  std::vector<std::string> hosts_;
  double timeout_;
};

}  // namespace strata
