#include "core/DynamicLibrary.h"

#include <dlfcn.h>

#include <algorithm>

#include "core/Error.h"

namespace strata {

DynamicLibrary::DynamicLibrary(const std::string& soname, const std::string& what, const std::string& hint,
                               const std::string& fallback_dirs)
    : soname_(soname), handle_(dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) {
  if (handle_) return;
  const char* first = dlerror();
  std::string why = first ? first : "not found";
  std::string tried;
  size_t start = 0;
  while (!handle_ && start < fallback_dirs.size()) {
    const size_t colon = std::min(fallback_dirs.find(':', start), fallback_dirs.size());
    const std::string dir = fallback_dirs.substr(start, colon - start);
    start = colon + 1;
    if (dir.empty()) continue;
    handle_ = dlopen((dir + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      dlerror();  // the first reason is the one reported
      tried += (tried.empty() ? "" : ", ") + dir;
    }
  }
  if (!handle_)
    throw runtime_error("cannot load " + soname + " (" + what + "): " + why +
                        (tried.empty() ? "" : " (also not in " + tried + ")") + ". " + hint);
}

void* DynamicLibrary::symbol(const char* name, const std::string& why_missing) const {
  void* p = dlsym(handle_, name);
  if (!p) throw runtime_error(soname_ + " has no " + name + ": " + why_missing);
  return p;
}

}  // namespace strata
