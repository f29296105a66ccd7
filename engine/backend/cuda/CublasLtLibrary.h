#pragma once
// cuBLASLt, opened with dlopen when a GPU is first used (its backend is made).
// Linking it would make every start of every Strata program load it (about
// 0.1 s and 200 MiB of resident memory, measured, even for CPU-only runs)
// and make the installed package depend on a library no Debian package
// provides. The header gives the types; the functions come from the library.
#include <cublasLt.h>

namespace strata::cuda {

struct CublasLtLibrary {
#define STRATA_CUBLASLT_FN(name) decltype(&::name) name = nullptr;
  STRATA_CUBLASLT_FN(cublasLtCreate)
  STRATA_CUBLASLT_FN(cublasLtDestroy)
  STRATA_CUBLASLT_FN(cublasLtGetStatusName)
  STRATA_CUBLASLT_FN(cublasLtGetStatusString)
  STRATA_CUBLASLT_FN(cublasLtMatmul)
  STRATA_CUBLASLT_FN(cublasLtMatmulAlgoGetHeuristic)
  STRATA_CUBLASLT_FN(cublasLtMatmulDescCreate)
  STRATA_CUBLASLT_FN(cublasLtMatmulDescDestroy)
  STRATA_CUBLASLT_FN(cublasLtMatmulDescSetAttribute)
  STRATA_CUBLASLT_FN(cublasLtMatmulPreferenceCreate)
  STRATA_CUBLASLT_FN(cublasLtMatmulPreferenceDestroy)
  STRATA_CUBLASLT_FN(cublasLtMatmulPreferenceSetAttribute)
  STRATA_CUBLASLT_FN(cublasLtMatrixLayoutCreate)
  STRATA_CUBLASLT_FN(cublasLtMatrixLayoutDestroy)
#undef STRATA_CUBLASLT_FN

  // The loaded library (never unloaded); throws runtime_error naming the
  // library and the loader's reason when it cannot be opened.
  static const CublasLtLibrary& get();
};

}  // namespace strata::cuda
