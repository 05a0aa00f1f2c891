// Function tables of vendor libraries the plugin dlopens (cuBLAS, NCCL): the plugin never links
// them, so each entry point is looked up by name.
#pragma once

#include <dlfcn.h>

#include <string>

namespace flowstone::cuda {

// Looks up `name` in `handle` and stores it in `fn`; remembers the first symbol that is missing.
template <typename Fn>
void ResolveSymbol(void* handle, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr && missing->empty()) missing->assign(name);
}

}  // namespace flowstone::cuda
