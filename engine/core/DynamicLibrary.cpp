#include "core/DynamicLibrary.h"

#include <dlfcn.h>

#include "core/Error.h"

namespace strata {

DynamicLibrary::DynamicLibrary(const std::string& soname, const std::string& what, const std::string& hint)
    : soname_(soname), handle_(dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) {
  if (!handle_) {
    const char* why = dlerror();
    throw runtime_error("cannot load " + soname + " (" + what + "): " + (why ? why : "not found") + ". " + hint);
  }
}

void* DynamicLibrary::symbol(const char* name, const std::string& why_missing) const {
  void* p = dlsym(handle_, name);
  if (!p) throw runtime_error(soname_ + " has no " + name + ": " + why_missing);
  return p;
}

}  // namespace strata
