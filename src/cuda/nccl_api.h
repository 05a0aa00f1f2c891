// The NCCL entry points the plugin uses for Horovod's collectives on GPU tensors, resolved with
// dlsym from the libnccl.so.2 handle that GPU discovery opened (from the loader's path,
// /usr/local/cuda or NVIDIA's nvidia-nccl-cu13 wheel). The plugin never links against NCCL.
//
// The types and values below are NCCL 2's public API (nccl.h), declared here because the NCCL
// headers are not needed to build the plugin.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>

#include "flowstone/status.h"
#include "flowstone/types.h"

namespace flowstone::cuda {

using ncclComm = void*;  // ncclComm_t (a pointer to NCCL's communicator)
using ncclResult = int;  // ncclResult_t; 0 is ncclSuccess
constexpr ncclResult kNcclSuccess = 0;
struct ncclUniqueId {  // ncclUniqueId: NCCL_UNIQUE_ID_BYTES (128) opaque bytes
  char internal[128];
};
// ncclRedOp_t
constexpr int kNcclSum = 0;
constexpr int kNcclAvg = 4;  // NCCL 2.10 and later

struct NcclApi {
  ncclResult (*GetVersion)(int* version);       // ncclGetVersion
  ncclResult (*GetUniqueId)(ncclUniqueId* id);  // ncclGetUniqueId
  ncclResult (*CommInitRank)(ncclComm* comm, int nranks, ncclUniqueId id, int rank);
  ncclResult (*CommDestroy)(ncclComm comm);          // ncclCommDestroy
  const char* (*GetErrorString)(ncclResult result);  // ncclGetErrorString
  ncclResult (*GroupStart)();                        // ncclGroupStart
  ncclResult (*GroupEnd)();                          // ncclGroupEnd
  ncclResult (*AllReduce)(const void* send, void* recv, size_t count, int datatype, int op,
                          ncclComm comm, cudaStream_t stream);  // ncclAllReduce
  ncclResult (*Broadcast)(const void* send, void* recv, size_t count, int datatype, int root,
                          ncclComm comm, cudaStream_t stream);  // ncclBroadcast
};

// Resolves every entry point from `library_handle` (a dlopen handle of libnccl.so.2). Fails
// with NotFound naming the first missing symbol.
Status LoadNcclApi(void* library_handle, std::unique_ptr<NcclApi>* api);

// OK, or Internal naming the NCCL call and NCCL's description of the result.
Status NcclCheck(const NcclApi& api, ncclResult result, const char* what);

// NCCL's ncclDataType_t for a dtype, or -1 when NCCL has none.
int NcclDataType(DType dtype);

// Runs Horovod's collectives on GPU tensors with NCCL (horovod_kernels.cc); called by the
// platform once NCCL loaded.
void RegisterNcclCollectives(const NcclApi* api);

}  // namespace flowstone::cuda
