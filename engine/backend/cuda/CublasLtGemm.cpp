#include "backend/cuda/CublasLtGemm.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <type_traits>

#include "backend/cuda/CublasLtLibrary.h"
#include "core/Error.h"

namespace strata::cuda {

namespace {
const CublasLtLibrary& lt() { return CublasLtLibrary::get(); }
}  // namespace

// Owns its descriptors: a plan that fails half made (no algorithm for a
// shape) releases what it had created.
struct CublasLtGemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algo{};
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    for (cublasLtMatrixLayout_t l : {first, second, out})
      if (l) lt().cublasLtMatrixLayoutDestroy(l);
    if (op) lt().cublasLtMatmulDescDestroy(op);
  }
};

namespace {

// The largest power of two (up to 256) dividing the address: cuBLASLt's
// heuristic may pick vectorised kernels only for what the pointers allow, and
// row slices of a batch start at any multiple of 4 bytes.
int alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  int a = 256;
  while (a > 4 && (v % static_cast<uintptr_t>(a)) != 0) a /= 2;
  return a;
}

std::string describe(bool ta, bool tb, int64_t m, int64_t n, int64_t k) {
  std::string s = ta ? "(A^T x " : "(A x ";
  s += tb ? "B^T" : "B";
  s += ", m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) + ")";
  return s;
}
}  // namespace

bool tf32_requested() {
  const char* tf32 = std::getenv("STRATA_TF32");
  return tf32 && std::strcmp(tf32, "1") == 0;
}

CublasLtGemm::CublasLtGemm(std::string device_name, void* workspace, size_t workspace_bytes)
    : device_name_(std::move(device_name)), workspace_(workspace), workspace_bytes_(workspace_bytes) {
  compute_ = tf32_requested() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (auto s = lt().cublasLtCreate(&handle_); s != CUBLAS_STATUS_SUCCESS)
    throw runtime_error(device_name_ + ": cublasLtCreate failed: " + lt().cublasLtGetStatusName(s) + " (" +
                        lt().cublasLtGetStatusString(s) + ")");
}

CublasLtGemm::~CublasLtGemm() {
  plans_.clear();
  if (handle_) lt().cublasLtDestroy(handle_);
}

void CublasLtGemm::fail(cublasStatus_t status, const char* call, const Key& key) const {
  const auto& [ta, tb, m, n, k, beta, aa, ab, ac, bias] = key;
  throw runtime_error(device_name_ + ": " + call + " failed for the matrix product " + describe(ta, tb, m, n, k) +
                      ": " + lt().cublasLtGetStatusName(status) + " (" + lt().cublasLtGetStatusString(status) + ")");
}

// cuBLASLt is column-major. A row-major matrix is its own transpose seen
// column-major, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T:
// B's storage is the first operand and A's the second, with the same flags.
CublasLtGemm::Plan& CublasLtGemm::plan(const Key& key, const float* bias) {
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  const auto& [ta, tb, m, n, k, has_beta, align_a, align_b, align_c, align_bias] = key;
  const bool has_bias = align_bias != 0;
  auto p = std::make_unique<Plan>();
  auto check = [&](cublasStatus_t s, const char* call) {
    if (s != CUBLAS_STATUS_SUCCESS) fail(s, call, key);
  };
  check(lt().cublasLtMatmulDescCreate(&p->op, compute_, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t op_first = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_second = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(lt().cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first),
        "cublasLtMatmulDescSetAttribute");
  check(lt().cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second),
        "cublasLtMatmulDescSetAttribute");
  // Column-major, the output is C^T (n x m): its rows are C's columns, so
  // the epilogue's per-row bias is the layer's bias per output unit. The
  // heuristic reads the bias pointer's alignment (it is part of the key),
  // so it is set here and again at each call.
  if (has_bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    check(lt().cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
          "cublasLtMatmulDescSetAttribute");
    check(lt().cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
          "cublasLtMatmulDescSetAttribute");
  }
  const uint64_t rows_first = static_cast<uint64_t>(tb ? k : n), cols_first = static_cast<uint64_t>(tb ? n : k);
  const uint64_t rows_second = static_cast<uint64_t>(ta ? m : k), cols_second = static_cast<uint64_t>(ta ? k : m);
  check(lt().cublasLtMatrixLayoutCreate(&p->first, CUDA_R_32F, rows_first, cols_first,
                                        static_cast<int64_t>(rows_first)),
        "cublasLtMatrixLayoutCreate");
  check(lt().cublasLtMatrixLayoutCreate(&p->second, CUDA_R_32F, rows_second, cols_second,
                                   static_cast<int64_t>(rows_second)),
        "cublasLtMatrixLayoutCreate");
  check(lt().cublasLtMatrixLayoutCreate(&p->out, CUDA_R_32F, static_cast<uint64_t>(n), static_cast<uint64_t>(m), n),
        "cublasLtMatrixLayoutCreate");

  cublasLtMatmulPreference_t pref = nullptr;
  check(lt().cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, void (*)(cublasLtMatmulPreference_t)> pref_owner(
      pref, [](cublasLtMatmulPreference_t q) { lt().cublasLtMatmulPreferenceDestroy(q); });
  const uint64_t ws = workspace_bytes_;
  const uint32_t al_first = static_cast<uint32_t>(align_b), al_second = static_cast<uint32_t>(align_a),
                 al_out = static_cast<uint32_t>(align_c);
  // Checked: a workspace limit not set would leave the library's default
  // (none), and the heuristic would choose worse algorithms unannounced.
  auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
    check(lt().cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value, sizeof value),
          "cublasLtMatmulPreferenceSetAttribute");
  };
  prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws);
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al_first);
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al_second);
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al_out);
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al_out);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s = lt().cublasLtMatmulAlgoGetHeuristic(handle_, p->op, p->first, p->second, p->out, p->out, pref,
                                                          1, &result, &found);
  if (s != CUBLAS_STATUS_SUCCESS) fail(s, "cublasLtMatmulAlgoGetHeuristic", key);
  if (found == 0) fail(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmulAlgoGetHeuristic (no algorithm)", key);
  // The algorithm's own check (e.g. its workspace or alignment needs).
  if (result.state != CUBLAS_STATUS_SUCCESS) fail(result.state, "cublasLtMatmulAlgoGetHeuristic (its algorithm)", key);
  p->algo = result.algo;
  (void)has_beta;
  return *plans_.emplace(key, std::move(p)).first->second;
}

bool CublasLtGemm::run(cudaStream_t stream, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, const float* b, float beta, float* c, const float* bias, void* workspace) {
  if (!workspace) workspace = workspace_;
  const Key key{
      trans_a, trans_b, m, n, k, beta != 0.0f, alignment(a), alignment(b), alignment(c), bias ? alignment(bias) : 0};
  std::lock_guard lock(mutex_);
  Key plain = key;
  std::get<9>(plain) = 0;
  if (bias && !unfused_.contains(key)) {
    // No algorithm with the epilogue for this product, or one that will not
    // run it: the plain product, and the caller adds the bias (remembered,
    // so this is found once per shape and said once on stderr).
    auto unfuse = [&](const char* why) {
      unfused_.insert(key);
      std::fprintf(stderr, "%s: the matrix product %s adds its bias separately: %s\n", device_name_.c_str(),
                   describe(trans_a, trans_b, m, n, k).c_str(), why);
    };
    Plan* p = nullptr;
    try {
      p = &plan(key, bias);
    } catch (const std::exception& e) {
      unfuse(e.what());
    }
    if (p) {
      const auto set = lt().cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
      if (set != CUBLAS_STATUS_SUCCESS) fail(set, "cublasLtMatmulDescSetAttribute (bias)", key);
      const cublasStatus_t s = lt().cublasLtMatmul(handle_, p->op, &alpha, b, p->first, a, p->second, &beta, c, p->out, c,
                                                   p->out, &p->algo, workspace, workspace_bytes_, stream);
      if (s == CUBLAS_STATUS_SUCCESS) return true;
      if (s != CUBLAS_STATUS_NOT_SUPPORTED) fail(s, "cublasLtMatmul", key);
      plans_.erase(key);
      unfuse("cublasLtMatmul refused its algorithm");
    }
  }
  Plan& p = plan(plain);
  const cublasStatus_t s = lt().cublasLtMatmul(handle_, p.op, &alpha, b, p.first, a, p.second, &beta, c, p.out, c, p.out,
                                               &p.algo, workspace, workspace_bytes_, stream);
  if (s != CUBLAS_STATUS_SUCCESS) fail(s, "cublasLtMatmul", plain);
  return false;
}

}  // namespace strata::cuda
