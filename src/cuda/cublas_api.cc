#include "cublas_api.h"

#include <memory>
#include <string>
#include <utility>

#include "dl_symbols.h"

namespace flowstone::cuda {

Status LoadCublasApi(void* library_handle, std::unique_ptr<CublasApi>* api) {
  if (library_handle == nullptr) {
    return errors::NotFound("cuBLAS is not loaded (libcublas.so.13 was not found)");
  }
  auto table = std::make_unique<CublasApi>();
  std::string missing;
  ResolveSymbol(library_handle, "cublasCreate_v2", &table->Create, &missing);
  ResolveSymbol(library_handle, "cublasDestroy_v2", &table->Destroy, &missing);
  ResolveSymbol(library_handle, "cublasSetStream_v2", &table->SetStream, &missing);
  ResolveSymbol(library_handle, "cublasGetVersion_v2", &table->GetVersion, &missing);
  ResolveSymbol(library_handle, "cublasGetStatusString", &table->GetStatusString, &missing);
  ResolveSymbol(library_handle, "cublasSgemm_v2", &table->Sgemm, &missing);
  ResolveSymbol(library_handle, "cublasDgemm_v2", &table->Dgemm, &missing);
  ResolveSymbol(library_handle, "cublasSgemmStridedBatched", &table->SgemmStridedBatched, &missing);
  ResolveSymbol(library_handle, "cublasDgemmStridedBatched", &table->DgemmStridedBatched, &missing);
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
