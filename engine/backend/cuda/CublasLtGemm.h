#pragma once
// Row-major float matrix products through cuBLASLt, the library NVIDIA tunes
// for every GPU generation. A product's descriptors and the heuristic's choice
// of algorithm are made once per shape (and pointer alignment) and reused, so
// a training step does no planning and the calls can be captured in a graph.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

namespace strata::cuda {

// STRATA_TF32=1: TF32 tensor cores for float32 products and convolutions
// (faster; 10-bit mantissa products, no longer comparable bit for bit with the CPU).
bool tf32_requested();

class CublasLtGemm {
public:
  // `workspace` (device memory of `workspace_bytes`) is lent for every call.
  CublasLtGemm(std::string device_name, void* workspace, size_t workspace_bytes);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // C[m,n] = alpha * op(A) op(B) + beta * C (+ `bias`, a row of n, on every
  // row of C: cuBLASLt's bias epilogue), row-major, queued on `stream`.
  // Returns whether the bias was added: false when there is none, or when
  // cuBLASLt has no algorithm with the epilogue for this product (then the
  // caller adds it). `workspace` (of the constructor's size) replaces the
  // lent one for a product that may run beside another (a second stream).
  bool run(cudaStream_t stream, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           const float* b, float beta, float* c, const float* bias = nullptr, void* workspace = nullptr);

private:
  struct Plan;
  // (trans_a, trans_b, m, n, k, beta != 0, alignment of a, b, c, and of the
  // bias, 0 for none: the bias epilogue's algorithm depends on it).
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, bool, int, int, int, int>;
  Plan& plan(const Key& key, const float* bias = nullptr);
  [[noreturn]] void fail(cublasStatus_t status, const char* call, const Key& key) const;

  std::string device_name_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_;
  size_t workspace_bytes_;
  // Pure float32 arithmetic unless STRATA_TF32=1 (TF32 tensor cores: faster,
  // 10-bit mantissa products, no longer comparable bit-for-bit with the CPU).
  cublasComputeType_t compute_;
  std::mutex mutex_;  // replicas sharing a GPU call from their own threads
  std::map<Key, std::unique_ptr<Plan>> plans_;
  std::set<Key> unfused_;  // products with a bias that cuBLASLt has no epilogue algorithm for
};

}  // namespace strata::cuda
