// Built when MPI support is off: the multi-worker strategy says why it cannot run.
#ifndef STRATA_WITH_MPI
#include "core/Error.h"
#include "distribute/Cluster.h"

namespace strata {

std::shared_ptr<Cluster> mpi_cluster(double) {
  throw bad_input("multi_worker_mirrored: this build has no MPI support (install libopenmpi-dev openmpi-bin and rebuild)");
}

bool mpi_built() { return false; }

}  // namespace strata
#endif
