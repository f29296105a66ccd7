#include "backend/cuda/CublasLtLibrary.h"

#include <string>

#include "core/DynamicLibrary.h"

namespace strata::cuda {

namespace {
// The major version this build was compiled against: its ABI.
const std::string kSoname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);

CublasLtLibrary load() {
  const DynamicLibrary lib(kSoname, "cuBLASLt, part of the CUDA toolkit " + std::to_string(CUBLAS_VER_MAJOR),
                           "Install the toolkit's cuBLAS or add its lib folder to LD_LIBRARY_PATH", STRATA_CUDA_LIBRARY_DIRS);
  CublasLtLibrary api;
#define STRATA_BIND(name) lib.bind(api.name, #name, "an unexpected version of cuBLASLt");
  STRATA_BIND(cublasLtCreate)
  STRATA_BIND(cublasLtDestroy)
  STRATA_BIND(cublasLtGetStatusName)
  STRATA_BIND(cublasLtGetStatusString)
  STRATA_BIND(cublasLtMatmul)
  STRATA_BIND(cublasLtMatmulAlgoGetHeuristic)
  STRATA_BIND(cublasLtMatmulDescCreate)
  STRATA_BIND(cublasLtMatmulDescDestroy)
  STRATA_BIND(cublasLtMatmulDescSetAttribute)
  STRATA_BIND(cublasLtMatmulPreferenceCreate)
  STRATA_BIND(cublasLtMatmulPreferenceDestroy)
  STRATA_BIND(cublasLtMatmulPreferenceSetAttribute)
  STRATA_BIND(cublasLtMatrixLayoutCreate)
  STRATA_BIND(cublasLtMatrixLayoutDestroy)
#undef STRATA_BIND
  return api;
}
}  // namespace

const CublasLtLibrary& CublasLtLibrary::get() {
  static const CublasLtLibrary api = load();  // a failed load throws, and is tried again next time
  return api;
}

}  // namespace strata::cuda
