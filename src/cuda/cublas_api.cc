#include "cublas_api.h"

#include <dlfcn.h>

#include <memory>
#include <string>
#include <utility>

namespace flowstone::cuda {
namespace {

// Looks up `name` and stores it in `fn`; remembers the first symbol that is missing.
template <typename Fn>
void Resolve(void* handle, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr && missing->empty()) missing->assign(name);
}

}  // namespace

Status LoadCublasApi(void* library_handle, std::unique_ptr<CublasApi>* api) {
  if (library_handle == nullptr) {
    return errors::NotFound("cuBLAS is not loaded (libcublas.so.13 was not found)");
  }
  auto table = std::make_unique<CublasApi>();
  std::string missing;
  Resolve(library_handle, "cublasCreate_v2", &table->Create, &missing);
  Resolve(library_handle, "cublasDestroy_v2", &table->Destroy, &missing);
  Resolve(library_handle, "cublasSetStream_v2", &table->SetStream, &missing);
  Resolve(library_handle, "cublasGetVersion_v2", &table->GetVersion, &missing);
  Resolve(library_handle, "cublasGetStatusString", &table->GetStatusString, &missing);
  Resolve(library_handle, "cublasSgemm_v2", &table->Sgemm, &missing);
  Resolve(library_handle, "cublasDgemm_v2", &table->Dgemm, &missing);
  Resolve(library_handle, "cublasSgemmStridedBatched", &table->SgemmStridedBatched, &missing);
  Resolve(library_handle, "cublasDgemmStridedBatched", &table->DgemmStridedBatched, &missing);
  if (!missing.empty()) {
    return errors::NotFound("cuBLAS has no symbol ", missing,
                            ": the libcublas.so.13 found is "
                            "not the cuBLAS 13 the plugin was built for. Install the cuBLAS of "
                            "CUDA 13 (e.g. pip install nvidia-cublas) or fix LD_LIBRARY_PATH.");
  }
  *api = std::move(table);
  return Status::OK();
}

Status CublasCheck(const CublasApi& api, cublasStatus status, const char* what) {
  if (status == kCublasSuccess) return Status::OK();
  return errors::Internal(what, " failed: ", api.GetStatusString(status), " (cuBLAS status ",
                          status, ")");
}

}  // namespace flowstone::cuda
