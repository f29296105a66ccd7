#include "distribute/Cluster.h"

#include "core/Error.h"

#include <unistd.h>

#include <cstdlib>

namespace strata {

std::string SingleProcessCluster::host() const {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

void SingleProcessCluster::abort(int, const std::string& message) {
  // One process has no other workers to stop: the error ends the run, not
  // the process (the dashboard runs the engine in its own).
  throw runtime_error(message);
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"})
    if (std::getenv(v)) return true;
  return false;
}

}  // namespace strata
