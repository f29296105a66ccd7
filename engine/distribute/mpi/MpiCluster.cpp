#include "distribute/mpi/MpiCluster.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "core/Error.h"

namespace strata {

namespace {
std::weak_ptr<Cluster> g_cluster;
bool g_skip_finalize = false;

void finalize_at_exit() {
  if (g_skip_finalize) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
}  // namespace

MpiCluster::MpiCluster(double timeout_seconds) : timeout_(timeout_seconds) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (provided < MPI_THREAD_SERIALIZED)
      throw runtime_error("MPI does not provide MPI_THREAD_SERIALIZED (got level " + std::to_string(provided) + ")");
    std::atexit(finalize_at_exit);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  host_.assign(name, static_cast<size_t>(len));
  std::vector<char> all(static_cast<size_t>(size_) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  for (int r = 0; r < size_; ++r) hosts_.emplace_back(all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
}

MpiCluster::~MpiCluster() = default;

void MpiCluster::wait(void* request, const std::string& what) {
  auto* req = static_cast<MPI_Request*>(request);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_);
  int done = 0;
  // Open MPI's non-blocking collectives progress only inside MPI calls, so
  // poll without pause for the first 50 ms (a step's collectives finish in
  // well under that), then back off to short sleeps for a slow or dead peer.
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  for (;;) {
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline) {
      char msg[512];
      std::snprintf(msg, sizeof msg,
                    "rank %d (%s): no answer within %.0f s during %s from the other ranks (on %s): a host is "
                    "unreachable, or a rank has died or hangs",
                    rank_, host_.c_str(), timeout_, what.c_str(), peer_hosts().c_str());
      // The caller decides what ends: strata-run fails the run and then
      // aborts the job, so no other rank waits on this one.
      throw worker_lost(msg);
    }
    if (std::chrono::steady_clock::now() > spin_until) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::string MpiCluster::peer_hosts() const {
  // A collective does not say which peer it waits for, so name every host
  // the other ranks run on (with two hosts: the one that went away).
  std::vector<std::string> seen;
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && std::find(seen.begin(), seen.end(), hosts_[static_cast<size_t>(r)]) == seen.end())
      seen.push_back(hosts_[static_cast<size_t>(r)]);
  std::string out;
  for (const auto& h : seen) out += (out.empty() ? "" : ", ") + h;
  return out;
}

void MpiCluster::all_reduce_sum(std::span<float> data) {
  if (size_ == 1 || data.empty()) return;
  // One non-blocking reduction per slice of at most 1<<28 elements (MPI's
  // counts are ints).
  const size_t chunk = size_t{1} << 28;
  std::vector<MPI_Request> reqs;
  for (size_t off = 0; off < data.size(); off += chunk) {
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, data.data() + off, static_cast<int>(std::min(chunk, data.size() - off)), MPI_FLOAT,
                   MPI_SUM, MPI_COMM_WORLD, &r);
    reqs.push_back(r);
  }
  for (auto& r : reqs) wait(&r, "a gradient all-reduce");
}

std::vector<double> MpiCluster::all_gather(const std::vector<double>& mine) {
  std::vector<double> all(mine.size() * static_cast<size_t>(size_));
  if (size_ == 1) return mine;
  MPI_Request r;
  MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), static_cast<int>(mine.size()),
                 MPI_DOUBLE, MPI_COMM_WORLD, &r);
  wait(&r, "the per-step exchange of losses");
  return all;
}

void MpiCluster::broadcast(std::span<std::byte> data, int root) {
  if (size_ == 1 || data.empty()) return;
  MPI_Request r;
  MPI_Ibcast(data.data(), static_cast<int>(data.size()), MPI_BYTE, root, MPI_COMM_WORLD, &r);
  wait(&r, "a broadcast from rank " + std::to_string(root));
}

void MpiCluster::abort(int code, const std::string& message) {
  std::fprintf(stderr, "strata-run [rank %d %s]: %s\n", rank_, host_.c_str(), message.c_str());
  std::fflush(stderr);
  // MPI_Abort ends every rank of the job, this one included; should it
  // return, the error still ends this rank's run.
  MPI_Abort(MPI_COMM_WORLD, code);
  throw runtime_error(message);
}

std::shared_ptr<Cluster> mpi_cluster(double timeout_seconds) {
  if (auto c = g_cluster.lock()) return c;
  if (!launched_by_mpi())
    throw bad_input("multi_worker_mirrored: start the workers with mpirun, e.g. `mpirun -np 2 strata-run PROJECT "
                    "--strategy multi_worker_mirrored` (this process was not started by an MPI launcher)");
  auto c = std::make_shared<MpiCluster>(timeout_seconds);
  g_cluster = c;
  return c;
}

bool mpi_built() { return true; }

void skip_mpi_finalize() { g_skip_finalize = true; }

}  // namespace strata
