#include "distribute/collectives/nccl/NcclLibrary.h"

#include "core/DynamicLibrary.h"
#include "core/Error.h"

namespace strata::nccl {

namespace {
// The major version this build was compiled against: its ABI.
const std::string kSoname = "libnccl.so." + std::to_string(NCCL_MAJOR);

NcclLibrary load() {
  const DynamicLibrary lib(kSoname, "NCCL " + std::to_string(NCCL_MAJOR),
                           "Install NCCL (e.g. the nvidia-nccl wheel or NVIDIA's libnccl2 package) or add its lib folder "
                           "to LD_LIBRARY_PATH",
                           STRATA_NCCL_LIBRARY_DIRS);
  NcclLibrary api;
#define STRATA_BIND(name) lib.bind(api.name, #name, "NCCL older than 2.14, which Strata needs");
  STRATA_BIND(ncclGetVersion)
  STRATA_BIND(ncclGetUniqueId)
  STRATA_BIND(ncclCommInitAll)
  STRATA_BIND(ncclCommInitRankConfig)
  STRATA_BIND(ncclCommDestroy)
  STRATA_BIND(ncclCommAbort)
  STRATA_BIND(ncclCommGetAsyncError)
  STRATA_BIND(ncclGetErrorString)
  STRATA_BIND(ncclGetLastError)
  STRATA_BIND(ncclGroupStart)
  STRATA_BIND(ncclGroupEnd)
  STRATA_BIND(ncclAllReduce)
  STRATA_BIND(ncclReduce)
  STRATA_BIND(ncclBroadcast)
#undef STRATA_BIND
  api.ncclGetVersion(&api.version);
  return api;
}
}  // namespace

const NcclLibrary& NcclLibrary::get() {
  static const NcclLibrary api = load();  // a failed load throws, and is tried again next time
  return api;
}

std::string NcclLibrary::unavailable() { return load_error<NcclLibrary>(); }

std::string NcclLibrary::error(ncclResult_t r, const std::string& what, ncclComm_t comm) const {
  std::string msg = what + ": " + ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(comm); last && *last) msg += " (" + std::string(last) + ")";
  return msg;
}

void NcclLibrary::check(ncclResult_t r, const std::string& what, ncclComm_t comm) const {
  if (r == ncclSuccess || r == ncclInProgress) return;
  throw runtime_error(error(r, what, comm));
}

}  // namespace strata::nccl
