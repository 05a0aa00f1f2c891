// The element-wise tail of TensorFlow's fused products (_FusedConv2D, _FusedMatMul): a bias add
// and an activation applied to the product's output in place, while it is still in cache. The
// graph optimizer fuses Conv2D/MatMul + BiasAdd + activation into one node
// (src/optimizer/plan_optimizer.cc); TensorFlow's remapper writes the same ops into the graphs
// it exports, so imported graphs that carry them run too.
//
// Each element goes through the same float operations as the separate BiasAdd and activation
// kernels (bias_ops.cc, elementwise_unary_ops.cc, activation_ops.cc), so a fused plan's results
// are bit-identical to the unfused plan's.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/status.h"
#include "ops/math/vector_math.h"
#include "ops/multiversion.h"

namespace flowstone {

namespace fused_detail {

enum Mode { kNone, kBias, kNormalize };

// data[o, c, k] = act(data[o, c, k] (* g[c] + b[c] | + b[c])) over [outer, channels, inner].
template <Mode kMode, typename T, typename Act>
__attribute__((always_inline)) inline void Epilogue(T* data, int64_t outer, int64_t channels,
                                                    int64_t inner, const T* g, const T* b,
                                                    Act act) {
  auto one = [&](T x, int64_t c) {
    if constexpr (kMode == kNormalize) {
      return act(x * g[c] + b[c]);  // as FusedBatchNorm: x * gain + shift
    } else if constexpr (kMode == kBias) {
      return act(x + b[c]);  // as BiasAdd
    } else {
      return act(x);
    }
  };
  if (inner == 1) {  // channels last: one pass along each row
    for (int64_t o = 0; o < outer; ++o) {
      T* row = data + o * channels;
      for (int64_t c = 0; c < channels; ++c) row[c] = one(row[c], c);
    }
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      T* row = data + (o * channels + c) * inner;
      for (int64_t k = 0; k < inner; ++k) row[k] = one(row[k], c);
    }
  }
}

// The same, vectorized with AVX2 where the CPU has it (the activations' kernels are too:
// elementwise_unary_ops.cc), for the modes without a multiply-add.
template <Mode kMode, typename T, typename Act>
FS_MULTIVERSION void FastEpilogue(T* data, int64_t outer, int64_t channels, int64_t inner,
                                  const T* g, const T* b, Act act) {
  Epilogue<kMode>(data, outer, channels, inner, g, b, act);
}

}  // namespace fused_detail

// kGeluExact is the exact (erf) GELU, (x * half) * (1 + erf(x * scale)) or with x / scale inside
// when `gelu_divide`: the node order of the graphs the remapper fuses it from (BERT's
// `x * 0.5 * (1.0 + tf.math.erf(x / sqrt(2.0)))`), so that the fused plan keeps their bits.
enum class FusedActivation { kNone, kRelu, kRelu6, kElu, kLeakyRelu, kGeluExact };

struct FusedEpilogue {
  // What comes before the activation: nothing, a bias (args: bias), or an inference batch norm
  // (args: scale, offset, mean, variance).
  enum class Scale { kNone, kBias, kBatchNorm };
  Scale scale = Scale::kNone;
  FusedActivation activation = FusedActivation::kNone;
  double leakyrelu_alpha = 0.2;
  double epsilon = 1e-4;
  // kGeluExact's constants (attrs _gelu_half, _gelu_scale, _gelu_divide); the defaults are
  // TensorFlow's GeluExact, 0.5 * x * (1 + erf(x / sqrt(2))).
  double gelu_half = 0.5;
  double gelu_scale = 0.70710678118654752440;
  bool gelu_divide = false;

  // Reads `fused_ops` ("BiasAdd" or "FusedBatchNorm", then optionally one of "Relu", "Relu6",
  // "Elu", "LeakyRelu"; or the activation alone, which TensorFlow's kernels do not accept but
  // which Conv2D -> Relu graphs without a bias fuse to; or "BiasAdd", "GeluExact") and checks it
  // against the number of `args`.
  static Status Parse(const std::string& op, const AttrMap& attrs, int num_args,
                      FusedEpilogue* out) {
    std::vector<std::string> ops = attrs.GetOr<std::vector<std::string>>("fused_ops", {});
    std::string listed;
    for (const std::string& s : ops) listed += (listed.empty() ? "" : ", ") + s;
    auto unsupported = [&] {
      return errors::Unimplemented(op, " does not support fused_ops [", listed,
                                   "]: supported are BiasAdd or FusedBatchNorm, then optionally "
                                   "one of Relu, Relu6, Elu, LeakyRelu, or the activation alone; "
                                   "or BiasAdd, GeluExact");
    };
    size_t i = 0;
    out->scale = Scale::kNone;
    if (i < ops.size() && ops[i] == "BiasAdd") {
      out->scale = Scale::kBias;
      ++i;
    } else if (i < ops.size() && ops[i] == "FusedBatchNorm") {
      out->scale = Scale::kBatchNorm;
      ++i;
    }
    out->activation = FusedActivation::kNone;
    if (i < ops.size()) {
      const std::string& a = ops[i++];
      if (a == "Relu") {
        out->activation = FusedActivation::kRelu;
      } else if (a == "Relu6") {
        out->activation = FusedActivation::kRelu6;
      } else if (a == "Elu") {
        out->activation = FusedActivation::kElu;
      } else if (a == "LeakyRelu") {
        out->activation = FusedActivation::kLeakyRelu;
      } else if (a == "GeluExact" && out->scale == Scale::kBias) {
        out->activation = FusedActivation::kGeluExact;
      } else {
        return unsupported();
      }
    }
    if (i != ops.size() || ops.empty()) return unsupported();
    const int want = out->num_args();
    if (num_args != want) {
      return errors::InvalidArgument(op, " with fused_ops [", listed, "] takes ", want,
                                     " argument(s) in args, but got ", num_args);
    }
    out->leakyrelu_alpha = attrs.GetOr<double>("leakyrelu_alpha", 0.2);
    out->epsilon = attrs.GetOr<double>("epsilon", 1e-4);
    out->gelu_half = attrs.GetOr<double>("_gelu_half", 0.5);
    out->gelu_scale = attrs.GetOr<double>("_gelu_scale", 0.70710678118654752440);
    out->gelu_divide = attrs.GetOr<bool>("_gelu_divide", false);
    return Status::OK();
  }

  int num_args() const { return scale == Scale::kBias ? 1 : scale == Scale::kBatchNorm ? 4 : 0; }

  // Rough cycles per element of the tail, for splitting it over threads.
  int64_t cost_per_element() const { return activation == FusedActivation::kGeluExact ? 40 : 2; }

  // Checks the args (inputs first_arg...) against the output's channel count and computes the
  // per-channel coefficients: y = act(x * gain + shift), gain empty for a bias, both empty
  // without either. A batch norm's coefficients are computed in double, as the FusedBatchNorm
  // kernel computes them (src/ops/nn/fused_batch_norm_ops.cc), so the results are the same.
  template <typename T>
  Status Coefficients(const std::string& op, const KernelContext& ctx, int first_arg,
                      int64_t channels, std::vector<T>* gain, std::vector<T>* shift) const {
    static const char* const kNames[] = {"scale", "offset", "mean", "variance"};
    for (int k = 0; k < num_args(); ++k) {
      const Tensor& t = ctx.input(first_arg + k);
      if (t.dtype() != ctx.input(0).dtype()) {
        return errors::InvalidArgument(op, ": args must have the input's dtype ",
                                       DTypeName(ctx.input(0).dtype()), ", but arg ", k, " is ",
                                       DTypeName(t.dtype()));
      }
      if (t.rank() != 1 || t.dim(0) != channels) {
        return errors::InvalidArgument(op, ": the ", scale == Scale::kBias ? "bias" : kNames[k],
                                       " must be a vector of the output's ", channels,
                                       " channels, but has shape ", t.shape().ToString());
      }
    }
    gain->clear();
    shift->clear();
    if (scale == Scale::kBias) {
      const T* b = ctx.input(first_arg).data<T>();
      shift->assign(b, b + channels);
    } else if (scale == Scale::kBatchNorm) {
      const T* s = ctx.input(first_arg).data<T>();
      const T* offset = ctx.input(first_arg + 1).data<T>();
      const T* mean = ctx.input(first_arg + 2).data<T>();
      const T* var = ctx.input(first_arg + 3).data<T>();
      for (int64_t c = 0; c < channels; ++c) {
        const double g = s[c] / std::sqrt(double(var[c]) + epsilon);
        gain->push_back(T(g));
        shift->push_back(T(offset[c] - double(mean[c]) * g));
      }
    }
    return Status::OK();
  }

  // Applies the tail to `data`, viewed as [outer, channels, inner] (channels last: inner = 1),
  // on the calling thread, with the coefficients from Coefficients.
  template <typename T>
  void Apply(T* data, int64_t outer, int64_t channels, int64_t inner, const std::vector<T>& gain,
             const std::vector<T>& shift) const {
    const T* g = gain.empty() ? nullptr : gain.data();
    const T* b = shift.empty() ? nullptr : shift.data();
    switch (activation) {
      case FusedActivation::kNone:
        return Loop(data, outer, channels, inner, g, b, [](T x) { return x; });
      case FusedActivation::kRelu:  // as ReluFn: NaN passes through
        return Loop(data, outer, channels, inner, g, b, [](T x) { return x < T(0) ? T(0) : x; });
      case FusedActivation::kRelu6:
        return Loop(data, outer, channels, inner, g, b, [](T x) {
          return x < 0 ? T(0) : x > 6 ? T(6) : x;
        });
      case FusedActivation::kElu:
        return Loop(data, outer, channels, inner, g, b,
                    [](T x) { return x < 0 ? T(std::expm1(x)) : x; });
      case FusedActivation::kLeakyRelu: {
        const T alpha = static_cast<T>(leakyrelu_alpha);
        return Loop(data, outer, channels, inner, g, b,
                    [alpha](T x) { return x < 0 ? alpha * x : x; });
      }
      case FusedActivation::kGeluExact: {
        // As the separate Mul, Erf (vector_math.h, from an FS_MULTIVERSION loop like the Erf
        // kernel's), AddV2 and Mul kernels compute it; Erf ends in a select, so no multiply-add
        // is contracted across the nodes' boundaries.
        const T half = static_cast<T>(gelu_half), scale = static_cast<T>(gelu_scale);
        if (gelu_divide) {
          return Loop(data, outer, channels, inner, g, b,
                      [half, scale](T x) { return (x * half) * (T(1) + vecmath::Erf(x / scale)); });
        }
        return Loop(data, outer, channels, inner, g, b,
                    [half, scale](T x) { return (x * half) * (T(1) + vecmath::Erf(x * scale)); });
      }
    }
  }

 private:
  template <typename T, typename Act>
  static void Loop(T* data, int64_t outer, int64_t channels, int64_t inner, const T* g, const T* b,
                   const Act& act) {
    if (g != nullptr) {
      // Not multiversioned: an AVX2 clone would contract x * g + b into one FMA, which the
      // FusedBatchNorm kernel (baseline ISA) does not, and the results would differ.
      return fused_detail::Epilogue<fused_detail::kNormalize>(data, outer, channels, inner, g, b,
                                                              act);
    }
    if (b != nullptr) {
      return fused_detail::FastEpilogue<fused_detail::kBias>(data, outer, channels, inner, g, b,
                                                             act);
    }
    fused_detail::FastEpilogue<fused_detail::kNone>(data, outer, channels, inner, g, b, act);
  }
};

}  // namespace flowstone
