#include "runtime/collectives/data_plane.h"

#include <cstring>

namespace flowstone::collectives {
namespace {

// data[i] *= factor for `count` elements of `dtype` (integers are truncated, as Horovod's
// average of integers is).
void Scale(void* data, int64_t count, DType dtype, double factor) {
  if (factor == 1.0) return;
  auto scale = [&]<typename T>(T* p) {
    for (int64_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] * factor);
  };
  switch (dtype) {
    case DType::kFloat32:
      return scale(static_cast<float*>(data));
    case DType::kFloat64:
      return scale(static_cast<double*>(data));
    case DType::kInt32:
      return scale(static_cast<int32_t*>(data));
    case DType::kInt64:
      return scale(static_cast<int64_t*>(data));
    case DType::kFloat16: {
      Half* p = static_cast<Half*>(data);
      for (int64_t i = 0; i < count; ++i) p[i] = Half(static_cast<float>(p[i]) * factor);
      return;
    }
    default:
      return;
  }
}

int64_t RowBytes(const Tensor& t) {
  int64_t row = static_cast<int64_t>(DTypeSize(t.dtype()));
  for (int d = 1; d < t.rank(); ++d) row *= t.dim(d);
  return row;
}

TensorShape WithFirstDim(const TensorShape& shape, int64_t first) {
  std::vector<int64_t> dims = shape.ToVector();
  dims[0] = first;
  return TensorShape(dims);
}

}  // namespace

Status DataPlane::Run(const Response& resp, const std::vector<const CollectiveRequest*>& requests,
                      std::vector<CollectiveResult>* results) {
  if (requests.size() != resp.names.size()) {
    return errors::Internal("Horovod: rank 0 scheduled tensors this rank never submitted");
  }
  results->assign(requests.size(), CollectiveResult{});
  if (requests[0]->device != nullptr) return RunOnDevice(resp, requests, results);
  switch (resp.kind) {
    case CollectiveKind::kAllreduce:
      return Allreduce(requests, results);
    case CollectiveKind::kAllgather:
      return Allgather(*requests[0], resp.sizes, &(*results)[0]);
    case CollectiveKind::kBroadcast:
      return Broadcast(*requests[0], &(*results)[0]);
    case CollectiveKind::kAlltoall:
      return Alltoall(*requests[0], resp.sizes, &(*results)[0]);
  }
  return errors::Internal("Horovod: unknown collective kind");
}

// One allreduce over a buffer holding every tensor of the response back to back (the fusion
// buffer), or over the tensor's own output when it is alone.
Status DataPlane::Allreduce(const std::vector<const CollectiveRequest*>& requests,
                            std::vector<CollectiveResult>* results) {
  const DType dtype = requests[0]->input.dtype();
  const int size = transport_->size();
  auto postscale = [&](const CollectiveRequest& q) {
    return q.postscale / (q.reduce_op == ReduceOp::kAverage ? size : 1);
  };
  for (size_t i = 0; i < requests.size(); ++i) {
    (*results)[i].output = Tensor::Host(dtype, requests[i]->input.shape());
  }
  if (requests.size() == 1) {
    const CollectiveRequest& q = *requests[0];
    Tensor& out = (*results)[0].output;
    std::memcpy(out.raw_data(), q.input.raw_data(), q.input.bytes());
    Scale(out.raw_data(), out.num_elements(), dtype, q.prescale);
    FS_RETURN_IF_ERROR(transport_->Allreduce(out.raw_data(), out.num_elements(), dtype));
    Scale(out.raw_data(), out.num_elements(), dtype, postscale(q));
    return Status::OK();
  }
  int64_t total = 0;
  for (const CollectiveRequest* q : requests) total += q->input.num_elements();
  fusion_buffer_.resize(total * DTypeSize(dtype));
  char* p = fusion_buffer_.data();
  for (const CollectiveRequest* q : requests) {
    std::memcpy(p, q->input.raw_data(), q->input.bytes());
    Scale(p, q->input.num_elements(), dtype, q->prescale);
    p += q->input.bytes();
  }
  FS_RETURN_IF_ERROR(transport_->Allreduce(fusion_buffer_.data(), total, dtype));
  p = fusion_buffer_.data();
  for (size_t i = 0; i < requests.size(); ++i) {
    Tensor& out = (*results)[i].output;
    std::memcpy(out.raw_data(), p, out.bytes());
    Scale(out.raw_data(), out.num_elements(), dtype, postscale(*requests[i]));
    p += out.bytes();
  }
  return Status::OK();
}

Status DataPlane::Allgather(const CollectiveRequest& q, const std::vector<int64_t>& rows,
                            CollectiveResult* result) {
  const int64_t row = RowBytes(q.input);
  std::vector<int64_t> recv_bytes;
  int64_t total = 0;
  for (int64_t n : rows) {
    recv_bytes.push_back(n * row);
    total += n;
  }
  result->output = Tensor::Host(q.input.dtype(), WithFirstDim(q.input.shape(), total));
  return transport_->Allgatherv(q.input.raw_data(), q.input.bytes(), result->output.raw_data(),
                                recv_bytes);
}

Status DataPlane::Broadcast(const CollectiveRequest& q, CollectiveResult* result) {
  Tensor out = Tensor::Host(q.input.dtype(), q.input.shape());
  std::memcpy(out.raw_data(), q.input.raw_data(), q.input.bytes());
  FS_RETURN_IF_ERROR(transport_->Broadcast(out.raw_data(), out.bytes(), q.root));
  result->output = std::move(out);
  return Status::OK();
}

// `matrix` is size x size: row = sender, column = receiver, in rows of the first dimension.
Status DataPlane::Alltoall(const CollectiveRequest& q, const std::vector<int64_t>& matrix,
                           CollectiveResult* result) {
  const int size = transport_->size();
  const int rank = transport_->rank();
  const int64_t row = RowBytes(q.input);
  std::vector<int64_t> send_bytes, recv_bytes;
  int64_t rows = 0;
  for (int peer = 0; peer < size; ++peer) {
    send_bytes.push_back(matrix[rank * size + peer] * row);
    const int64_t received = matrix[peer * size + rank];
    recv_bytes.push_back(received * row);
    result->received_splits.push_back(received);
    rows += received;
  }
  result->output = Tensor::Host(q.input.dtype(), WithFirstDim(q.input.shape(), rows));
  return transport_->Alltoallv(q.input.raw_data(), send_bytes, result->output.raw_data(),
                               recv_bytes);
}

// Multiplies a tensor in `device`'s memory by `factor` through host memory. Scale factors are
// rare (most reductions are plain sums or averages, which NCCL does itself), and the round trip
// spares the device plugins a scaling kernel per dtype.
namespace {

Status ScaleInDeviceMemory(Device* device, Tensor* t, double factor) {
  if (factor == 1.0) return Status::OK();
  Tensor host;
  FS_RETURN_IF_ERROR(device->CopyToHost(*t, &host));
  Scale(host.raw_data(), host.num_elements(), host.dtype(), factor);
  return device->CopyFromHost(host, t);
}

}  // namespace

// Tensors in a device's own memory: the device type's DeviceCollectives (NCCL for GPUs).
Status DataPlane::RunOnDevice(const Response& resp,
                              const std::vector<const CollectiveRequest*>& requests,
                              std::vector<CollectiveResult>* results) {
  Device* device = requests[0]->device;
  std::shared_ptr<DeviceCollectives> impl = DeviceCollectivesFor(device->type());
  if (impl == nullptr) {
    return errors::Unimplemented("Horovod ", CollectiveKindName(resp.kind), " of tensors in ",
                                 device->type(), " memory needs the ", device->type(),
                                 " plugin's collectives (NCCL for GPUs), which are not loaded");
  }
  const CollectiveRequest& q = *requests[0];
  switch (resp.kind) {
    case CollectiveKind::kAllreduce:
      // One call for the averaged tensors of the fused group and one for the summed ones.
      for (const bool average : {true, false}) {
        std::vector<size_t> members;
        std::vector<Tensor> inputs, outputs;
        for (size_t i = 0; i < requests.size(); ++i) {
          if ((requests[i]->reduce_op == ReduceOp::kAverage) != average) continue;
          members.push_back(i);
          inputs.push_back(requests[i]->input);
          FS_RETURN_IF_ERROR(ScaleInDeviceMemory(device, &inputs.back(), requests[i]->prescale));
        }
        if (members.empty()) continue;
        FS_RETURN_IF_ERROR(impl->Allreduce(*transport_, device, inputs, average, &outputs));
        for (size_t k = 0; k < members.size(); ++k) {
          FS_RETURN_IF_ERROR(
              ScaleInDeviceMemory(device, &outputs[k], requests[members[k]]->postscale));
          (*results)[members[k]].output = std::move(outputs[k]);
        }
      }
      return Status::OK();
    case CollectiveKind::kAllgather:
      return impl->Allgather(*transport_, device, q.input, resp.sizes, &(*results)[0].output);
    case CollectiveKind::kBroadcast:
      return impl->Broadcast(*transport_, device, q.input, q.root, &(*results)[0].output);
    case CollectiveKind::kAlltoall:
      break;
  }
  return errors::Unimplemented("Horovod ", CollectiveKindName(resp.kind), " of tensors in ",
                               device->type(), " memory");
}

}  // namespace flowstone::collectives
