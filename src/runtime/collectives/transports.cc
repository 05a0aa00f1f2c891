#include "runtime/collectives/transports.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

namespace flowstone::collectives {
namespace {

constexpr const char* kPluginFile = "libflowstone_mpi.so";

class LocalTransport final : public CollectiveTransport {
 public:
  std::string name() const override { return "local (no launcher)"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  int cross_rank() const override { return 0; }
  int cross_size() const override { return 1; }
  bool threads_supported() const override { return true; }
  Status GatherToRoot(const std::string& mine, std::vector<std::string>* all, double) override {
    *all = {mine};
    return Status::OK();
  }
  Status BroadcastFromRoot(std::string*, double) override { return Status::OK(); }
  Status Allreduce(void*, int64_t, DType) override { return Status::OK(); }
  Status Allgatherv(const void* send, int64_t send_bytes, void* recv,
                    const std::vector<int64_t>&) override {
    if (send_bytes > 0) std::memcpy(recv, send, send_bytes);
    return Status::OK();
  }
  Status Broadcast(void*, int64_t, int) override { return Status::OK(); }
  Status Alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                   const std::vector<int64_t>&) override {
    if (send_bytes[0] > 0) std::memcpy(recv, send, send_bytes[0]);
    return Status::OK();
  }
};

// The directory holding libflowstone.so: the plugin is installed beside it.
std::string CoreLibraryDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&CoreLibraryDirectory), &info) == 0 ||
      info.dli_fname == nullptr) {
    return ".";
  }
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace

bool LaunchedByMpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

std::unique_ptr<CollectiveTransport> MakeLocalTransport() {
  return std::make_unique<LocalTransport>();
}

Status LoadMpiTransport(const std::string& path, std::unique_ptr<CollectiveTransport>* out) {
  const std::string file = path.empty() ? CoreLibraryDirectory() + "/" + kPluginFile : path;
  // RTLD_GLOBAL: Open MPI dlopens its own components, which resolve libmpi's symbols globally.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return errors::NotFound(
        "hvd.init(): cannot load the MPI plugin ", file, ": ", err ? err : "unknown dlopen error",
        ". It needs Open MPI's libmpi.so.40: install it with `apt-get install libopenmpi3 "
        "openmpi-bin` (Debian/Ubuntu), or run without a launcher for a single process");
  }
  auto create = reinterpret_cast<CreateTransportFn>(dlsym(handle, kCreateMpiTransportSymbol));
  if (create == nullptr) {
    return errors::NotFound("hvd.init(): ", file, " does not export ", kCreateMpiTransportSymbol,
                            "; it is not a Flowstone MPI plugin of this version");
  }
  std::string error;
  CollectiveTransport* transport = create(&error);
  if (transport == nullptr) return errors::Unavailable("hvd.init(): MPI did not start: ", error);
  out->reset(transport);
  return Status::OK();
}

}  // namespace flowstone::collectives
