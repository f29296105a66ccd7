#include "backend/cuda/CublasLtLibrary.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "core/Error.h"

namespace strata::cuda {

namespace {
// The major version this build was compiled against: its ABI.
const std::string kSoname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);

CublasLtLibrary load() {
  void* lib = dlopen(kSoname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    throw runtime_error("cannot load " + kSoname + " (cuBLASLt, part of the CUDA toolkit " +
                        std::to_string(CUBLAS_VER_MAJOR) + "): " + (why ? why : "not found") +
                        ". Install the toolkit's cuBLAS or add its lib folder to LD_LIBRARY_PATH");
  }
  CublasLtLibrary api;
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn) throw runtime_error(kSoname + " has no " + name + ": an unexpected version of cuBLASLt");
  };
#define STRATA_BIND(name) bind(api.name, #name);
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
