// Horovod's collectives on GPU tensors: the ops' kernels (shared with the CPU, see
// src/ops/distributed/horovod_kernels.h) registered for the GPU, and NCCL behind the core's
// DeviceCollectives interface. The collectives' background thread calls it in the same order on
// every rank; each call queues NCCL work on the GPU's stream, behind the kernels that produced
// the inputs and ahead of those that read the outputs. One communicator per GPU ordinal is made
// on first use: rank 0's ncclUniqueId reaches the other ranks through the MPI transport.
#include "ops/distributed/horovod_kernels.h"

#include <map>
#include <mutex>

#include "cuda_device.h"
#include "cuda_kernel.h"
#include "flowstone/collectives.h"
#include "nccl_api.h"

namespace flowstone::cuda {
namespace {

const std::vector<DType> kNcclTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                       DType::kInt64, DType::kFloat16};

FS_REGISTER_GPU_KERNEL(
    GpuKernel("HorovodAllreduce", HorovodAllreduceKernel).Types(kNcclTypes).Needs("NCCL"));
FS_REGISTER_GPU_KERNEL(GpuKernel("HorovodGroupedAllreduce", HorovodGroupedAllreduceKernel)
                           .Types(kNcclTypes)
                           .Needs("NCCL"));
FS_REGISTER_GPU_KERNEL(
    GpuKernel("HorovodAllgather", HorovodAllgatherKernel).Types(kNcclTypes).Needs("NCCL"));
FS_REGISTER_GPU_KERNEL(
    GpuKernel("HorovodBroadcast", HorovodBroadcastKernel).Types(kNcclTypes).Needs("NCCL"));

class NcclCollectives final : public DeviceCollectives {
 public:
  explicit NcclCollectives(const NcclApi* api) : api_(api) {}

  ~NcclCollectives() override {
    for (auto& [ordinal, comm] : comms_) api_->CommDestroy(comm);
  }

  Status Allreduce(CollectiveTransport& transport, Device* device,
                   const std::vector<Tensor>& inputs, bool average,
                   std::vector<Tensor>* outputs) override {
    ncclComm comm;
    FS_RETURN_IF_ERROR(Prepare(transport, device, &comm));
    const GpuContext& gpu = static_cast<CudaDevice*>(device)->context();
    outputs->resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      FS_RETURN_IF_ERROR(Tensor::Allocate(device->allocator(), inputs[i].dtype(), inputs[i].shape(),
                                          &(*outputs)[i]));
    }
    // One group: NCCL fuses the launches, as the fusion buffer does on the host.
    FS_RETURN_IF_ERROR(NcclCheck(*api_, api_->GroupStart(), "ncclGroupStart"));
    Status s;
    for (size_t i = 0; i < inputs.size() && s.ok(); ++i) {
      s = NcclCheck(*api_,
                    api_->AllReduce(inputs[i].raw_data(), (*outputs)[i].raw_data(),
                                    inputs[i].num_elements(), NcclDataType(inputs[i].dtype()),
                                    average ? kNcclAvg : kNcclSum, comm, gpu.stream),
                    "ncclAllReduce");
    }
    Status ended = NcclCheck(*api_, api_->GroupEnd(), "ncclGroupEnd");
    return s.ok() ? ended : s;
  }

  // NCCL's allgather needs equal counts, so each rank's rows are a broadcast from that rank into
  // its place in the output, all in one group.
  Status Allgather(CollectiveTransport& transport, Device* device, const Tensor& input,
                   const std::vector<int64_t>& rows, Tensor* output) override {
    ncclComm comm;
    FS_RETURN_IF_ERROR(Prepare(transport, device, &comm));
    const GpuContext& gpu = static_cast<CudaDevice*>(device)->context();
    std::vector<int64_t> dims = input.shape().ToVector();
    const int64_t row_elements = dims[0] == 0 ? 0 : input.num_elements() / dims[0];
    int64_t total = 0;
    for (int64_t r : rows) total += r;
    dims[0] = total;
    FS_RETURN_IF_ERROR(
        Tensor::Allocate(device->allocator(), input.dtype(), TensorShape(dims), output));
    const size_t element_bytes = DTypeSize(input.dtype());
    FS_RETURN_IF_ERROR(NcclCheck(*api_, api_->GroupStart(), "ncclGroupStart"));
    Status s;
    int64_t offset = 0;
    for (int root = 0; root < static_cast<int>(rows.size()) && s.ok(); ++root) {
      char* place = static_cast<char*>(output->raw_data()) + offset * row_elements * element_bytes;
      s = NcclCheck(*api_,
                    api_->Broadcast(input.raw_data(), place, rows[root] * row_elements,
                                    NcclDataType(input.dtype()), root, comm, gpu.stream),
                    "ncclBroadcast");
      offset += rows[root];
    }
    Status ended = NcclCheck(*api_, api_->GroupEnd(), "ncclGroupEnd");
    return s.ok() ? ended : s;
  }

  Status Broadcast(CollectiveTransport& transport, Device* device, const Tensor& input, int root,
                   Tensor* output) override {
    ncclComm comm;
    FS_RETURN_IF_ERROR(Prepare(transport, device, &comm));
    const GpuContext& gpu = static_cast<CudaDevice*>(device)->context();
    FS_RETURN_IF_ERROR(Tensor::Allocate(device->allocator(), input.dtype(), input.shape(), output));
    return NcclCheck(*api_,
                     api_->Broadcast(input.raw_data(), output->raw_data(), input.num_elements(),
                                     NcclDataType(input.dtype()), root, comm, gpu.stream),
                     "ncclBroadcast");
  }

 private:
  // Makes the device current on the background thread and the communicator of its GPU (on first
  // use, which every rank reaches in the same response).
  Status Prepare(CollectiveTransport& transport, Device* device, ncclComm* comm) {
    const int ordinal = static_cast<CudaDevice*>(device)->context().ordinal;
    FS_RETURN_IF_ERROR(CudaCheck(cudaSetDevice(ordinal), "cudaSetDevice"));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = comms_.find(ordinal);
    if (it != comms_.end()) {
      *comm = it->second;
      return Status::OK();
    }
    ncclUniqueId id{};
    if (transport.rank() == 0) {
      FS_RETURN_IF_ERROR(NcclCheck(*api_, api_->GetUniqueId(&id), "ncclGetUniqueId"));
    }
    FS_RETURN_IF_ERROR(transport.Broadcast(&id, sizeof(id), 0));
    FS_RETURN_IF_ERROR(NcclCheck(*api_,
                                 api_->CommInitRank(comm, transport.size(), id, transport.rank()),
                                 "ncclCommInitRank"));
    comms_[ordinal] = *comm;
    return Status::OK();
  }

  const NcclApi* api_;
  std::mutex mu_;
  std::map<int, ncclComm> comms_;  // per GPU ordinal
};

}  // namespace

void RegisterNcclCollectives(const NcclApi* api) {
  RegisterDeviceCollectives("GPU", std::make_shared<NcclCollectives>(api));
}

}  // namespace flowstone::cuda
