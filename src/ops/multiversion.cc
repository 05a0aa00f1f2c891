#include "ops/multiversion.h"

namespace flowstone {

std::string DispatchedKernelIsa() {
#if FS_MULTIVERSION_ENABLED
  // The same test the target_clones resolver makes.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v3")) return "avx2+fma";
#endif
  return "baseline";
}

const std::vector<std::string>& DispatchedKernels() {
  // gemm.cc TileBlock, training_ops.cc AdamBlock and RMSPropBlock, elementwise.h BinaryRun
  // (arithmetic and comparisons), elementwise_unary_ops.cc UnaryRun, nn/lstm_ops.cc ForwardRow
  // and BackwardRow, activation_ops.cc MapRun, nn_ops.cc SoftmaxRow, loss_ops.cc's float softmax
  // cross-entropy rows, pooling_ops.cc's channels-last max pooling gradients.
  static const std::vector<std::string> kernels = {
      "MatMul float64/int",
      "ResourceApplyAdam",
      "ResourceApplyRMSProp",
      "binary elementwise ops",
      "unary elementwise ops",
      "LSTM gate math (LSTMBlockCell, BlockLSTM and their gradients)",
      "Relu6, Elu, Selu, LeakyRelu",
      "Softmax, LogSoftmax",
      "softmax cross entropy (float32)",
      "MaxPoolGrad and the MaxPool / MaxPoolGrad workspace pair (NHWC)",
  };
  return kernels;
}

}  // namespace flowstone
