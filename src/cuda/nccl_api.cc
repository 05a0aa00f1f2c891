#include "nccl_api.h"

#include <string>

#include "dl_symbols.h"

namespace flowstone::cuda {

Status LoadNcclApi(void* library_handle, std::unique_ptr<NcclApi>* api) {
  if (library_handle == nullptr) {
    return errors::NotFound("NCCL is not loaded (libnccl.so.2 was not found)");
  }
  auto table = std::make_unique<NcclApi>();
  std::string missing;
  ResolveSymbol(library_handle, "ncclGetVersion", &table->GetVersion, &missing);
  ResolveSymbol(library_handle, "ncclGetUniqueId", &table->GetUniqueId, &missing);
  ResolveSymbol(library_handle, "ncclCommInitRank", &table->CommInitRank, &missing);
  ResolveSymbol(library_handle, "ncclCommDestroy", &table->CommDestroy, &missing);
  ResolveSymbol(library_handle, "ncclGetErrorString", &table->GetErrorString, &missing);
  ResolveSymbol(library_handle, "ncclGroupStart", &table->GroupStart, &missing);
  ResolveSymbol(library_handle, "ncclGroupEnd", &table->GroupEnd, &missing);
  ResolveSymbol(library_handle, "ncclAllReduce", &table->AllReduce, &missing);
  ResolveSymbol(library_handle, "ncclBroadcast", &table->Broadcast, &missing);
  if (!missing.empty()) {
    return errors::NotFound("NCCL has no symbol ", missing,
                            ": the libnccl.so.2 found is not NCCL 2. Install NCCL 2 (e.g. pip "
                            "install nvidia-nccl-cu13) or fix LD_LIBRARY_PATH.");
  }
  int version = 0;
  if (table->GetVersion(&version) != kNcclSuccess || version < 21000) {
    return errors::NotFound("NCCL (version code ", version,
                            ") is older than the 2.10 (21000) "
                            "that Horovod's collectives need (ncclAvg)");
  }
  *api = std::move(table);
  return Status::OK();
}

Status NcclCheck(const NcclApi& api, ncclResult result, const char* what) {
  if (result == kNcclSuccess) return Status::OK();
  return errors::Internal(what, " failed: ", api.GetErrorString(result), " (NCCL error ", result,
                          ")");
}

int NcclDataType(DType dtype) {
  // ncclDataType_t values.
  switch (dtype) {
    case DType::kUInt8:
      return 1;
    case DType::kInt32:
      return 2;
    case DType::kInt64:
      return 4;
    case DType::kFloat16:
      return 6;
    case DType::kFloat32:
      return 7;
    case DType::kFloat64:
      return 8;
    case DType::kBFloat16:
      return 9;
    default:
      return -1;
  }
}

}  // namespace flowstone::cuda
