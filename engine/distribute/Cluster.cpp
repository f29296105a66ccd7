#include "distribute/Cluster.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace strata {

std::string SingleProcessCluster::host() const {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

void SingleProcessCluster::abort(int code, const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::_Exit(code);
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"})
    if (std::getenv(v)) return true;
  return false;
}

}  // namespace strata
