#include "backend/cuda/CudnnLibrary.h"

#include <cuda_runtime_api.h>

#include "core/DynamicLibrary.h"
#include "core/Error.h"

namespace strata::cuda {

namespace {
// The major version this build was compiled against: its ABI.
const std::string kSoname = "libcudnn.so." + std::to_string(CUDNN_MAJOR);

CudnnLibrary load() {
  const DynamicLibrary lib(kSoname, "cuDNN " + std::to_string(CUDNN_MAJOR),
                           "Install cuDNN (NVIDIA's libcudnn9 package or the nvidia-cudnn wheel) or add its lib folder "
                           "to LD_LIBRARY_PATH; without it convolutions use im2col and cuBLASLt",
                           STRATA_CUDNN_LIBRARY_DIRS);
  CudnnLibrary api;
#define STRATA_BIND(name) lib.bind(api.name, #name, "an unexpected version of cuDNN");
  STRATA_BIND(cudnnGetVersion)
  STRATA_BIND(cudnnGetErrorString)
  STRATA_BIND(cudnnGetLastErrorString)
  STRATA_BIND(cudnnCreate)
  STRATA_BIND(cudnnDestroy)
  STRATA_BIND(cudnnSetStream)
  STRATA_BIND(cudnnCreateTensorDescriptor)
  STRATA_BIND(cudnnDestroyTensorDescriptor)
  STRATA_BIND(cudnnSetTensor4dDescriptor)
  STRATA_BIND(cudnnCreateFilterDescriptor)
  STRATA_BIND(cudnnDestroyFilterDescriptor)
  STRATA_BIND(cudnnSetFilter4dDescriptor)
  STRATA_BIND(cudnnCreateConvolutionDescriptor)
  STRATA_BIND(cudnnDestroyConvolutionDescriptor)
  STRATA_BIND(cudnnSetConvolution2dDescriptor)
  STRATA_BIND(cudnnSetConvolutionMathType)
  STRATA_BIND(cudnnGetConvolution2dForwardOutputDim)
  STRATA_BIND(cudnnGetConvolutionForwardAlgorithm_v7)
  STRATA_BIND(cudnnGetConvolutionBackwardDataAlgorithm_v7)
  STRATA_BIND(cudnnGetConvolutionBackwardFilterAlgorithm_v7)
  STRATA_BIND(cudnnFindConvolutionForwardAlgorithm)
  STRATA_BIND(cudnnFindConvolutionBackwardDataAlgorithm)
  STRATA_BIND(cudnnFindConvolutionBackwardFilterAlgorithm)
  STRATA_BIND(cudnnGetConvolutionForwardWorkspaceSize)
  STRATA_BIND(cudnnGetConvolutionBackwardDataWorkspaceSize)
  STRATA_BIND(cudnnGetConvolutionBackwardFilterWorkspaceSize)
  STRATA_BIND(cudnnConvolutionForward)
  STRATA_BIND(cudnnConvolutionBackwardData)
  STRATA_BIND(cudnnConvolutionBackwardFilter)
  STRATA_BIND(cudnnBackendCreateDescriptor)
  STRATA_BIND(cudnnBackendDestroyDescriptor)
  STRATA_BIND(cudnnBackendSetAttribute)
  STRATA_BIND(cudnnBackendGetAttribute)
  STRATA_BIND(cudnnBackendFinalize)
  STRATA_BIND(cudnnBackendExecute)
#undef STRATA_BIND
  return api;
}
}  // namespace

const CudnnLibrary& CudnnLibrary::get() {
  static const CudnnLibrary api = load();  // a failed load throws, and is tried again next time
  return api;
}

std::string CudnnLibrary::unavailable() { return load_error<CudnnLibrary>(); }

void CudnnLibrary::check(cudnnStatus_t s, const std::string& what, const std::string& device) const {
  if (s == CUDNN_STATUS_SUCCESS) return;
  // The status names a category ("CUDNN_STATUS_BAD_PARAM"); cuDNN 9 keeps
  // the failed check's own words for the calling thread (which dimension,
  // which attribute), all a GPU run's log has to go on.
  char detail[1024] = "";
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string message = what + ": " + cudnnGetErrorString(s);
  if (detail[0]) message += std::string(" (") + detail + ")";
  if (s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED && !device.empty()) {
    // The caller goes on (another way), whose next launch check must not
    // report the failed allocation cuDNN left behind as its own.
    cudaGetLastError();
    throw device_memory_exhausted(message, device);
  }
  throw runtime_error(message);
}

}  // namespace strata::cuda
