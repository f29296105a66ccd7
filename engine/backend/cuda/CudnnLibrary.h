#pragma once
// cuDNN, opened with dlopen the first time a GPU convolves, for the reasons
// cuBLASLt is (CublasLtLibrary.h): the legacy convolution API (cudnn_cnn.h,
// CudnnConvolution) and the backend (graph) API's descriptors, engines and
// execution (cudnn_graph.h, CudnnGraphConvolution).
#include <cudnn.h>

#include <string>

namespace strata::cuda {

struct CudnnLibrary {
#define STRATA_CUDNN_FN(name) decltype(&::name) name = nullptr;
  STRATA_CUDNN_FN(cudnnGetVersion)
  STRATA_CUDNN_FN(cudnnGetErrorString)
  STRATA_CUDNN_FN(cudnnGetLastErrorString)
  STRATA_CUDNN_FN(cudnnCreate)
  STRATA_CUDNN_FN(cudnnDestroy)
  STRATA_CUDNN_FN(cudnnSetStream)
  STRATA_CUDNN_FN(cudnnCreateTensorDescriptor)
  STRATA_CUDNN_FN(cudnnDestroyTensorDescriptor)
  STRATA_CUDNN_FN(cudnnSetTensor4dDescriptor)
  STRATA_CUDNN_FN(cudnnCreateFilterDescriptor)
  STRATA_CUDNN_FN(cudnnDestroyFilterDescriptor)
  STRATA_CUDNN_FN(cudnnSetFilter4dDescriptor)
  STRATA_CUDNN_FN(cudnnCreateConvolutionDescriptor)
  STRATA_CUDNN_FN(cudnnDestroyConvolutionDescriptor)
  STRATA_CUDNN_FN(cudnnSetConvolution2dDescriptor)
  STRATA_CUDNN_FN(cudnnSetConvolutionMathType)
  STRATA_CUDNN_FN(cudnnGetConvolution2dForwardOutputDim)
  STRATA_CUDNN_FN(cudnnGetConvolutionForwardAlgorithm_v7)
  STRATA_CUDNN_FN(cudnnGetConvolutionBackwardDataAlgorithm_v7)
  STRATA_CUDNN_FN(cudnnGetConvolutionBackwardFilterAlgorithm_v7)
  STRATA_CUDNN_FN(cudnnFindConvolutionForwardAlgorithm)
  STRATA_CUDNN_FN(cudnnFindConvolutionBackwardDataAlgorithm)
  STRATA_CUDNN_FN(cudnnFindConvolutionBackwardFilterAlgorithm)
  STRATA_CUDNN_FN(cudnnGetConvolutionForwardWorkspaceSize)
  STRATA_CUDNN_FN(cudnnGetConvolutionBackwardDataWorkspaceSize)
  STRATA_CUDNN_FN(cudnnGetConvolutionBackwardFilterWorkspaceSize)
  STRATA_CUDNN_FN(cudnnConvolutionForward)
  STRATA_CUDNN_FN(cudnnConvolutionBackwardData)
  STRATA_CUDNN_FN(cudnnConvolutionBackwardFilter)
  STRATA_CUDNN_FN(cudnnBackendCreateDescriptor)
  STRATA_CUDNN_FN(cudnnBackendDestroyDescriptor)
  STRATA_CUDNN_FN(cudnnBackendSetAttribute)
  STRATA_CUDNN_FN(cudnnBackendGetAttribute)
  STRATA_CUDNN_FN(cudnnBackendFinalize)
  STRATA_CUDNN_FN(cudnnBackendExecute)
#undef STRATA_CUDNN_FN

  // The loaded library (never unloaded); throws runtime_error naming the
  // library and the loader's reason when it cannot be opened.
  static const CudnnLibrary& get();
  // "" when the library loads, else why not.
  static std::string unavailable();
  // Whether `s` says cuDNN will not run a call (cuDNN 9's categories of
  // unsupported and bad parameter: CUDNN_STATUS_NOT_SUPPORTED_SHAPE, ...), a
  // refusal the caller answers with another way rather than an error.
  static bool refusal(cudnnStatus_t s) {
    const int category = CUDNN_STATUS_CATEGORY(static_cast<int>(s));
    return category == CUDNN_STATUS_NOT_SUPPORTED || category == CUDNN_STATUS_BAD_PARAM;
  }
  // Throws runtime_error "<what>: <status> (<cuDNN's last error message>)"
  // unless `s` is success; the typed device-memory error when cuDNN could
  // not allocate on `device` (callers pass it where a call runs on the
  // device: the race of ways passes such a way over, a step's failure names
  // the remedy).
  void check(cudnnStatus_t s, const std::string& what, const std::string& device = {}) const;
};

}  // namespace strata::cuda
