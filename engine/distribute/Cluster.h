#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace strata {

// The worker processes of a multi-worker run, as the strategy sees them:
// identity plus the few collectives it needs. The single-process cluster is
// trivial; MpiCluster (built with MPI) spans the ranks of mpirun. Every
// collective waits at most timeout_seconds for the other workers and then
// fails with an error naming the ranks that did not answer, instead of
// hanging forever.
class Cluster {
public:
  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // among the workers on this host
  virtual int local_size() const = 0;
  virtual std::string host() const = 0;
  // Every worker's host, in rank order.
  virtual std::vector<std::string> hosts() const = 0;
  virtual std::string transport() const = 0;
  // Element-wise sum over workers, in place (bit-identical on every worker).
  virtual void all_reduce_sum(std::span<float> data) = 0;
  // Every worker's vector (all of the same length), concatenated in rank order.
  virtual std::vector<double> all_gather(const std::vector<double>& mine) = 0;
  // Root's bytes into every worker's `data` (all of the same length): NCCL's
  // unique id travels this way.
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  // Seconds a collective waits for the other workers before failing.
  virtual double timeout_seconds() const = 0;
  // Ends every worker's process with an error (a failed rank must not leave
  // the others waiting); with one process, throws the error instead (the
  // engine never ends the process it runs in itself: the dashboard's).
  [[noreturn]] virtual void abort(int code, const std::string& message) = 0;
};

class SingleProcessCluster final : public Cluster {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string host() const override;
  std::vector<std::string> hosts() const override { return {host()}; }
  std::string transport() const override { return "none"; }
  void all_reduce_sum(std::span<float>) override {}
  std::vector<double> all_gather(const std::vector<double>& mine) override { return mine; }
  void broadcast(std::span<std::byte>, int) override {}
  double timeout_seconds() const override { return 300; }
  [[noreturn]] void abort(int code, const std::string& message) override;
};

// The MPI cluster of this process (initialising MPI on first use), or a
// bad_input error saying why there is none: MPI not built in, or the process
// was not started by mpirun/srun.
std::shared_ptr<Cluster> mpi_cluster(double timeout_seconds);
bool mpi_built();
// MPI_Finalize synchronises with every rank and can wait forever for one
// that died; a run that tolerates dead ranks (parameter_server) exits
// without it.
void skip_mpi_finalize();
// True when the process was started by an MPI launcher (mpirun, srun).
bool launched_by_mpi();

}  // namespace strata
