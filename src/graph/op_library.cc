#include "flowstone/op_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>

#include "graph/op_library_load.h"

namespace flowstone {

namespace internal {

LibraryLoad*& CurrentLibraryLoad() {
  thread_local LibraryLoad* current = nullptr;
  return current;
}

}  // namespace internal

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "'" : ", '") + name + "'";
  return out;
}

}  // namespace

Status LoadOpLibrary(const std::string& path, std::vector<std::string>* op_names) {
  // One load at a time: the dynamic loader runs a library's registrars on the loading thread,
  // and two loads of one library must not both count its ops.
  static std::mutex load_mutex;
  std::lock_guard<std::mutex> lock(load_mutex);
  internal::LibraryLoad load;
  internal::CurrentLibraryLoad() = &load;
  // RTLD_LOCAL: the library's own symbols stay its own; it reaches the core's registry through
  // libflowstone.so, which is already loaded.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  internal::CurrentLibraryLoad() = nullptr;
  if (handle == nullptr) {
    const char* message = dlerror();
    return errors::NotFound(message != nullptr ? message : path + ": cannot be loaded");
  }
  if (!load.already_registered.empty()) {
    return errors::AlreadyExists(
        "the op library ", path,
        " registers ops whose names are already registered: ", JoinNames(load.already_registered),
        ". Rename them (op names are global), or do not ",
        "load the library twice under two paths.");
  }
  if (!load.without_shape_fn.empty()) {
    return errors::InvalidArgument("the op library ", path, " declares ops without a shape ",
                                   "function: ", JoinNames(load.without_shape_fn),
                                   ". Add .Shape(...) to their OpBuilder.");
  }
  std::sort(load.registered.begin(), load.registered.end());
  *op_names = std::move(load.registered);
  return Status::OK();
}

}  // namespace flowstone
