// Fusion, as TensorFlow's remapper does it: a Conv2D, DepthwiseConv2dNative or MatMul followed by
// a per-channel bias (BiasAdd, or an Add of a vector of the channels) or an inference
// FusedBatchNorm (convolutions only), and/or an activation (Relu, Relu6, Elu, LeakyRelu), runs as
// one _FusedConv2D / _FusedDepthwiseConv2dNative / _FusedMatMul node in place of the chain's last
// node, when nothing else reads the intermediate results;
// BiasAddGrad(ReluGrad) runs as one _ReluGradBiasAddGrad; and a float32 NHWC MaxPool with a
// MaxPoolGrad of it runs as _MaxPoolWithWorkspace + _MaxPoolGradWithWorkspace. See
// docs/architecture/graph-optimizer.md.
#pragma once

#include "optimizer/plan_optimizer.h"

namespace flowstone {

// Adds to `rewrites` (the other rewrites of the plan, already found) a replacement for the last
// node of each chain of `scope`'s needed nodes that can be fused. The fused kernels compute each
// element with the same operations as the separate kernels, so results are bit-identical; but
// with `fold_batch_norms`, an inference batch norm after a Conv2D whose filter and statistics are
// constants is folded into the filter and a bias (Conv2D -> [BiasAdd] -> FusedBatchNorm ->
// [activation] becomes one _FusedConv2D with a BiasAdd), which rounds differently.
void FuseProducts(const OptimizerScope& scope, PlanRewrites* rewrites, bool fold_batch_norms);

}  // namespace flowstone
