#pragma once
// NCCL, opened with dlopen the first time a strategy asks for it, for the
// reasons cuBLASLt is (backend/cuda/CublasLtLibrary.h): no Debian package
// provides it, and CPU-only runs should not load it. The header gives the
// types; the functions come from the library.
#include <nccl.h>

#include <string>

namespace strata::nccl {

struct NcclLibrary {
#define STRATA_NCCL_FN(name) decltype(&::name) name = nullptr;
  STRATA_NCCL_FN(ncclGetVersion)
  STRATA_NCCL_FN(ncclGetUniqueId)
  STRATA_NCCL_FN(ncclCommInitAll)
  STRATA_NCCL_FN(ncclCommInitRankConfig)
  STRATA_NCCL_FN(ncclCommDestroy)
  STRATA_NCCL_FN(ncclCommAbort)
  STRATA_NCCL_FN(ncclCommGetAsyncError)
  STRATA_NCCL_FN(ncclGetErrorString)
  STRATA_NCCL_FN(ncclGetLastError)
  STRATA_NCCL_FN(ncclGroupStart)
  STRATA_NCCL_FN(ncclGroupEnd)
  STRATA_NCCL_FN(ncclAllReduce)
  STRATA_NCCL_FN(ncclReduce)
  STRATA_NCCL_FN(ncclBroadcast)
#undef STRATA_NCCL_FN
  int version = 0;  // NCCL_VERSION_CODE of the loaded library

  // The loaded library (never unloaded); throws runtime_error naming the
  // library and the loader's reason when it cannot be opened.
  static const NcclLibrary& get();
  // "" when the library loads, else why not (for CrossDeviceOps::enabled).
  static std::string unavailable();

  // Throws runtime_error "<what>: <NCCL's error> (<its last message>)".
  void check(ncclResult_t r, const std::string& what, ncclComm_t comm = nullptr) const;
  // "what: NCCL's message (its last error on comm)", as check() throws it.
  std::string error(ncclResult_t r, const std::string& what, ncclComm_t comm = nullptr) const;
};

}  // namespace strata::nccl
