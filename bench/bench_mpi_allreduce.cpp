// All-reduce bandwidth between MPI ranks, nccl-tests style: for each size, a
// few warm-up iterations, then timed iterations, each one checked (every rank
// fills element i with (rank+1)*(1 + i%7); after the sum every element must be
// exactly n(n+1)/2*(1 + i%7), integers far below 2^24 so any summation order
// is exact). Prints one JSON line per size on rank 0 with, for each path,
// time per all-reduce, algbw = bytes / time and busbw = algbw * 2(n-1)/n.
//
// Paths (all in place, MPI_SUM over MPI_FLOAT on MPI_COMM_WORLD):
//   mpi         MPI_Allreduce, the blocking collective (OpenMPI: coll/tuned)
//   iallreduce  MPI_Iallreduce + MPI_Wait (OpenMPI: coll/libnbc), the same
//               request Strata uses but waited for without a deadline
//   strata      Cluster::all_reduce_sum from strata::mpi_cluster(timeout):
//               MPI_Iallreduce polled with MPI_Test against a deadline (what
//               multi_worker_mirrored does for host gradients)
// Separating iallreduce from strata shows what the non-blocking algorithm
// costs and what the deadline polling costs on top.
//
// Time per iteration is the slowest rank's (all ranks leave a barrier, run the
// collective, stop their clock; the maximum over ranks is taken afterwards,
// outside the timed region). Fill and verification are not timed.
//
//   mpirun --allow-run-as-root --oversubscribe -np 2 bench_mpi_allreduce
//   mpirun ... -np 2 bench_mpi_allreduce --sizes 1M,25M --paths mpi,strata --min-seconds 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "BenchUtil.h"
#include "distribute/Cluster.h"

namespace {

using namespace strata::bench;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<size_t> counts;  // floats per buffer
  std::vector<std::string> paths{"mpi", "iallreduce", "strata"};
  int warmup = 5;
  int min_iters = 10;
  int max_iters = 2000;
  double min_seconds = 0.5;  // timed collective time per size and path, at least
  double timeout = 120;      // Strata's collective deadline
};

inline float pattern(int rank, size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(1 + i % 7)); }

void fill(std::span<float> buf, int rank) {
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = pattern(rank, i);
}

int64_t count_wrong(std::span<const float> buf, int ranks) {
  const int tri = ranks * (ranks + 1) / 2;
  int64_t bad = 0;
  for (size_t i = 0; i < buf.size(); ++i)
    if (buf[i] != static_cast<float>(tri * static_cast<int>(1 + i % 7))) ++bad;
  return bad;
}

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  std::fprintf(stderr, "bench_mpi_allreduce: %s failed: %s\n", what, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

struct PathResult {
  std::vector<double> seconds;  // slowest rank's time, per timed iteration
  int64_t wrong = 0;            // wrong elements over all ranks and iterations
};

// One size on one path: warm-up, then checked and timed iterations until at
// least min_iters and min_seconds of collective time. Every rank takes the
// same decision to stop: it is made on values all-reduced (MAX) over ranks.
PathResult run_path(const std::string& path, std::span<float> buf, strata::Cluster& cluster, const Options& o) {
  const int rank = cluster.rank(), n = cluster.size();
  const int count = static_cast<int>(buf.size());
  auto once = [&] {
    if (path == "mpi") {
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    } else if (path == "iallreduce") {
      MPI_Request r;
      check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buf.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r),
                "MPI_Iallreduce");
      check_mpi(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    } else {
      cluster.all_reduce_sum(buf);
    }
  };
  PathResult res;
  // Warm-up: connections, registration, first touch, the collective's
  // algorithm selection. Checked too (a wrong result is wrong anywhere).
  int64_t warm_wrong = 0;
  for (int k = 0; k < o.warmup; ++k) {
    fill(buf, rank);
    once();
    warm_wrong += count_wrong(buf, n);
  }
  // Summed over ranks so every rank reports (and exits with) the same verdict.
  check_mpi(MPI_Allreduce(&warm_wrong, &res.wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce (check)");
  double total = 0;
  for (int it = 0;; ++it) {
    fill(buf, rank);
    check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    const auto t0 = Clock::now();
    once();
    const double mine = std::chrono::duration<double>(Clock::now() - t0).count();
    // {slowest rank's time, largest error count}: identical on every rank,
    // so every rank takes the same decision to stop and the same verdict.
    double v[2] = {mine, static_cast<double>(count_wrong(buf, n))};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce (stats)");
    res.seconds.push_back(v[0]);
    res.wrong += static_cast<int64_t>(v[1]);
    total += v[0];
    if ((it + 1 >= o.min_iters && total >= o.min_seconds) || it + 1 >= o.max_iters) break;
  }
  return res;
}

[[noreturn]] void usage(int code, int rank) {
  if (rank == 0)
    std::fprintf(code ? stderr : stdout,
                 "usage: mpirun -np N bench_mpi_allreduce [--sizes LIST] [--paths LIST] [--warmup N] [--min-iters N]\n"
                 "                                        [--max-iters N] [--min-seconds S] [--timeout S]\n"
                 "  --sizes: float counts, comma-separated, decimal K/M/G suffixes (25M = 25,000,000 floats).\n"
                 "           Default 1M,25M plus a sweep 4K..64M and 250K,6.25M (= 1 MB, 25 MB).\n"
                 "  --paths: any of mpi,iallreduce,strata (default all three).\n");
  std::exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  // Arguments are parsed before MPI starts (--timeout is the cluster's); the
  // cluster initialises MPI (MPI_THREAD_SERIALIZED, finalised at exit), and
  // usage is printed by rank 0 only.
  Options o;
  bool counts_given = false;
  bool bad_args = false, help = false;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument("missing value");
        return argv[++i];
      };
      if (a == "--sizes") { o.counts = parse_list<size_t>(value(), [](const std::string& v) { return parse_decimal(v); }); counts_given = true; }
      else if (a == "--paths") o.paths = parse_list<std::string>(value(), [](const std::string& s) { return s; });
      else if (a == "--warmup") o.warmup = std::stoi(value());
      else if (a == "--min-iters") o.min_iters = std::stoi(value());
      else if (a == "--max-iters") o.max_iters = std::stoi(value());
      else if (a == "--min-seconds") o.min_seconds = std::stod(value());
      else if (a == "--timeout") o.timeout = std::stod(value());
      else if (a == "-h" || a == "--help") help = true;
      else bad_args = true;
    }
  } catch (const std::exception&) {
    bad_args = true;
  }
  for (const auto& p : o.paths)
    if (p != "mpi" && p != "iallreduce" && p != "strata") bad_args = true;
  for (size_t c : o.counts)
    if (c == 0 || c > size_t{1} << 30) bad_args = true;  // one int-count MPI call per buffer
  if (!counts_given) o.counts = {4'000, 16'000, 64'000, 250'000, 256'000, 1'000'000, 4'000'000, 6'250'000,
                                 16'000'000, 25'000'000, 64'000'000};

  if (!strata::launched_by_mpi()) {
    std::fprintf(stderr, "bench_mpi_allreduce: start it with mpirun, e.g. `mpirun -np 2 bench_mpi_allreduce`\n");
    return 2;
  }
  std::shared_ptr<strata::Cluster> cluster;
  try {
    cluster = strata::mpi_cluster(o.timeout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_mpi_allreduce: %s\n", e.what());
    return 2;
  }
  const int rank = cluster->rank(), n = cluster->size();
  if (help) usage(0, rank);
  if (bad_args) usage(2, rank);

  if (rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(lib, &len);
    std::string version(lib, static_cast<size_t>(len));
    if (auto nl = version.find_first_of("\r\n,"); nl != std::string::npos) version.resize(nl);
    std::cout << nlohmann::json{{"bench", "mpi_allreduce_info"}, {"ranks", n},
                                {"local_size", cluster->local_size()}, {"hosts", cluster->hosts()},
                                {"mpi", version}, {"transport", cluster->transport()},
                                {"timeout_s", o.timeout}, {"warmup", o.warmup}, {"min_iters", o.min_iters},
                                {"min_seconds", o.min_seconds}}
                     .dump()
              << std::endl;
  }

  const size_t largest = *std::max_element(o.counts.begin(), o.counts.end());
  std::vector<float> storage(largest);
  int64_t total_wrong = 0;
  const double factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
  for (size_t count : o.counts) {
    std::span<float> buf(storage.data(), count);
    const size_t bytes = count * sizeof(float);
    nlohmann::json line{{"bench", "mpi_allreduce"}, {"ranks", n}, {"floats", count}, {"bytes", bytes}};
    int64_t wrong_here = 0;
    for (const std::string& path : o.paths) {
      const PathResult r = run_path(path, buf, *cluster, o);
      wrong_here += r.wrong;
      const double med = median(r.seconds);
      const auto [lo, hi] = std::minmax_element(r.seconds.begin(), r.seconds.end());
      double mean = 0;
      for (double s : r.seconds) mean += s;
      mean /= static_cast<double>(r.seconds.size());
      const double algbw = static_cast<double>(bytes) / med / 1e9;
      line[path] = {{"iters", r.seconds.size()},
                    {"time_us", med * 1e6},
                    {"time_us_min", *lo * 1e6},
                    {"time_us_max", *hi * 1e6},
                    {"time_us_mean", mean * 1e6},
                    {"algbw_gbps", algbw},
                    {"busbw_gbps", algbw * factor},
                    // Best iteration, as a ceiling less sensitive to a shared machine.
                    {"busbw_gbps_best", static_cast<double>(bytes) / *lo / 1e9 * factor}};
    }
    line["check"] = wrong_here == 0 ? "ok" : "FAILED";
    line["wrong_elements"] = wrong_here;
    total_wrong += wrong_here;
    if (rank == 0) std::cout << line.dump() << std::endl;
  }
  if (total_wrong != 0) {
    if (rank == 0) std::fprintf(stderr, "bench_mpi_allreduce: %lld wrong elements\n", static_cast<long long>(total_wrong));
    return 1;
  }
  return 0;
}
