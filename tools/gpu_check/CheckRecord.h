#pragma once
// One comparison of a device's result against the reference's, as printed on
// the console and in the report. Sections return lists of these.
#include <string>

namespace strata::gpu_check {

struct CheckRecord {
  std::string op;     // the Backend call ("gemm", "copy_to_host", ...)
  std::string shape;  // sizes and variant, and which output when the op has several
  // max |device - cpu| / max(1, |cpu|) over the output (+inf for an
  // unexpected NaN, an exception or a size mismatch); 0 for exact matches.
  double max_error = 0;
  double tolerance = 0;  // 0: values must be equal
  bool passed = false;
  std::string detail;  // why it failed (first bad index and both values, or the error's message)
};

}  // namespace strata::gpu_check
