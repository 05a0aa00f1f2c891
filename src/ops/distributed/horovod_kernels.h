// The kernels of Horovod's collectives that also run on GPUs: the CPU registers them in
// horovod_ops.cc and the CUDA plugin (src/cuda/horovod_kernels.cc) registers the same functions
// for GPU tensors, which the background thread hands to the GPU's DeviceCollectives (NCCL).
#pragma once

#include "flowstone/kernel.h"

namespace flowstone {

Status HorovodAllreduceKernel(KernelContext& ctx);
Status HorovodGroupedAllreduceKernel(KernelContext& ctx);
Status HorovodAllgatherKernel(KernelContext& ctx);
Status HorovodBroadcastKernel(KernelContext& ctx);

}  // namespace flowstone
