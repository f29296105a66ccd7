#pragma once
// A vendor library opened at run time with dlopen (cuBLASLt, cuDNN, NCCL,
// NVML): programs start without it and the package does not depend on it;
// the first use opens it or says clearly why it cannot.
#include <string>

namespace strata {

class DynamicLibrary {
public:
  // Opens `soname` (never closed) the loader's way (LD_LIBRARY_PATH, the
  // loader's cache), else from each of `fallback_dirs` (':'-separated: where
  // the build found the library's headers, e.g. the CUDA toolkit's lib
  // folder, which the loader's cache may not list); throws runtime_error
  // "cannot load SONAME (WHAT): the loader's reason. HINT" when none opens.
  DynamicLibrary(const std::string& soname, const std::string& what, const std::string& hint,
                 const std::string& fallback_dirs = "");

  // Binds `fn` to the library's symbol `name`; throws runtime_error
  // "SONAME has no NAME: WHY_MISSING" when it lacks it.
  template <typename Fn>
  void bind(Fn& fn, const char* name, const std::string& why_missing) const {
    fn = reinterpret_cast<Fn>(symbol(name, why_missing));
  }

private:
  void* symbol(const char* name, const std::string& why_missing) const;
  std::string soname_;
  void* handle_ = nullptr;
};

// "" when `Library::get()` succeeds, else its error message (for
// CrossDeviceOps::enabled and similar "is it there?" questions).
template <typename Library>
std::string load_error() {
  try {
    Library::get();
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace strata
