// How much GPU memory a device's allocator may hold: TensorFlow's rule for GPUOptions and
// tf.config. (TF_FORCE_GPU_ALLOW_GROWTH is applied by discovery, for every platform.) Plain C++ (no
// CUDA), so that it is tested without a GPU.
#pragma once

#include <cstdint>

#include "flowstone/gpu_platform.h"

namespace flowstone::cuda {

// An explicit memory_limit_bytes wins; else memory_fraction > 0 gives that share of the total;
// else what is free now minus a reserve for the CUDA context, library workspaces and other
// processes: 225 MiB on GPUs with less than 2 GiB, else the larger of 300 MiB and 5% of the total.
int64_t GpuMemoryLimitBytes(const GpuMemoryOptions& memory, int64_t free_bytes,
                            int64_t total_bytes);

}  // namespace flowstone::cuda
