// Built when MPI support is off: the multi-worker strategy says why it cannot run.
#ifndef STRATA_WITH_MPI
#include "core/Error.h"
#include "distribute/Cluster.h"
#include "distribute/parameter_server/RemoteParameterServers.h"

namespace strata {

std::shared_ptr<Cluster> mpi_cluster(double) {
  throw bad_input("multi_worker_mirrored: this build has no MPI support (install libopenmpi-dev openmpi-bin and rebuild)");
}

bool mpi_built() { return false; }

void skip_mpi_finalize() {}

void serve_parameters(Cluster&, LocalParameterStore&, const RemoteServerOptions&, ServerObserver*) {
  throw bad_input("parameter_server across processes needs MPI, and this build has none");
}

std::unique_ptr<RemoteParameterStore> connect_parameter_servers(Cluster&, LocalParameterStore&, const RemoteServerOptions&) {
  throw bad_input("parameter_server across processes needs MPI, and this build has none");
}

}  // namespace strata
#endif
