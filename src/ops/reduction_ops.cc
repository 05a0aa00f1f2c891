// Reductions: Sum, Mean, Max, Min, Prod, and the logical Any and All, over any set of axes, and
// ArgMax/ArgMin along one axis.
//
// A reduction is computed on a canonical view of the input: dimensions of size 1 are dropped and
// neighbouring dimensions that are all reduced (or all kept) are merged, leaving alternating
// groups such as [kept, reduced, kept]. Each pass reduces the last reduced group, seen as a 3-D
// array [P, R, Q] -> [P, Q]:
//   * Q == 1 reduces contiguous rows, with several independent accumulators so the loop
//     vectorizes, and pairwise splitting so float rounding error grows with log(R), not R;
//   * Q > 1 accumulates whole rows of Q into a block of column accumulators (vectorizes across
//     columns without reordering any sum).
// Inputs with several reduced groups ([R, K, R]) take one pass per group. float32 sums
// accumulate in double. Work is split into units whose boundaries depend only on the shape, so
// results are bitwise reproducible whatever the number of threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// ---------------------------------------------------------------------------------------------
// Axes and shapes

// Marks the axes listed in `axes` (a scalar or vector of int32/int64, negative values counting
// from the end; repeats allowed) in `reduced`, which gets one entry per input dimension.
Status ReadReductionAxes(const Tensor& axes, int rank, std::vector<bool>* reduced) {
  if (axes.rank() > 1) {
    return errors::InvalidArgument("reduction_indices must be a scalar or a vector, but has shape ",
                                   axes.shape().ToString());
  }
  reduced->assign(rank, false);
  for (int64_t i = 0; i < axes.num_elements(); ++i) {
    int64_t axis = axes.ElementAsInt64(i);
    if (axis < -rank || axis >= rank) {
      return errors::InvalidArgument("Invalid reduction dimension ", axis, " for input with ", rank,
                                     " dimensions: axes must be in [", -rank, ", ", rank, ")");
    }
    (*reduced)[axis < 0 ? axis + rank : axis] = true;
  }
  return Status::OK();
}

// The reduced shape: reduced dimensions become 1 (keep_dims) or disappear.
std::vector<int64_t> ReducedDims(const Dims& dims, const std::vector<bool>& reduced,
                                 bool keep_dims) {
  std::vector<int64_t> out;
  for (int i = 0; i < dims.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(dims[i]);
    } else if (keep_dims) {
      out.push_back(1);
    }
  }
  return out;
}

Status ReductionShape(InferenceContext& ctx) {
  const PartialShape& input = ctx.input(0);
  const PartialShape& axes_shape = ctx.input(1);
  bool keep_dims = ctx.attrs().GetOr<bool>("keep_dims", false);
  if (axes_shape.known_rank() && axes_shape.rank() > 1) {
    return errors::InvalidArgument("reduction_indices must be a scalar or a vector, but has rank ",
                                   axes_shape.rank());
  }
  const Tensor* axes = ctx.input_value(1);
  if (axes == nullptr) {
    if (axes_shape.known_rank() && axes_shape.rank() == 1 && axes_shape.dim(0) == 0) {
      ctx.set_output(0, input);  // an empty axis list reduces nothing
    } else if (keep_dims && input.known_rank()) {
      ctx.set_output(0, PartialShape::UnknownOfRank(input.rank()));
    } else {
      ctx.set_output(0, PartialShape::Unknown());
    }
    return Status::OK();
  }
  if (!input.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<bool> reduced;
  FS_RETURN_IF_ERROR(ReadReductionAxes(*axes, input.rank(), &reduced));
  ctx.set_output(0, PartialShape(ReducedDims(input.dims(), reduced, keep_dims)));
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Reducers. Each has an accumulator type, an identity (the result over zero elements) and an
// associative Combine. Integer arithmetic wraps around as TensorFlow's does (done in unsigned
// arithmetic, where wrapping is defined).

template <typename T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

// float32 sums and products accumulate in double (complex64 in complex128): ample precision at
// the same memory traffic.
template <typename T>
using WideAcc = std::conditional_t<std::is_same_v<T, float>, double,
                                   std::conditional_t<std::is_same_v<T, complex64>, complex128, T>>;

// Means of integers accumulate in int64, so that (say) the mean of uint8 pixels is exact.
template <typename T>
using MeanAcc = std::conditional_t<std::is_integral_v<T>, int64_t, WideAcc<T>>;

template <typename T, typename AccT = WideAcc<T>>
struct SumReducer {
  using Acc = AccT;
  static constexpr bool kPairwise = true;
  static Acc Identity() { return Acc(0); }
  static Acc Combine(Acc a, Acc b) { return WrapAdd(a, b); }
};

template <typename T>
struct ProdReducer {
  using Acc = WideAcc<T>;
  static constexpr bool kPairwise = false;
  static Acc Identity() { return Acc(1); }
  static Acc Combine(Acc a, Acc b) { return WrapMul(a, b); }
};

// Max and Min propagate NaN as numpy does (`a != a` is false for integers and folds away).
template <typename T>
struct MaxReducer {
  using Acc = T;
  static constexpr bool kPairwise = false;
  static Acc Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) {
      return -std::numeric_limits<T>::infinity();
    } else {
      return std::numeric_limits<T>::lowest();
    }
  }
  static Acc Combine(Acc a, Acc b) { return (a > b || a != a) ? a : b; }
};

template <typename T>
struct MinReducer {
  using Acc = T;
  static constexpr bool kPairwise = false;
  static Acc Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) {
      return std::numeric_limits<T>::infinity();
    } else {
      return std::numeric_limits<T>::max();
    }
  }
  static Acc Combine(Acc a, Acc b) { return (a < b || a != a) ? a : b; }
};

// Logical or and and of bools (Any, All), accumulated as bytes (0 or 1): bitwise | and & on
// them vectorize, and a std::vector of them is a plain array, unlike std::vector<bool>.
struct AnyReducer {
  using Acc = uint8_t;
  static constexpr bool kPairwise = false;
  static Acc Identity() { return 0; }
  static Acc Combine(Acc a, Acc b) { return a | b; }
};

struct AllReducer {
  using Acc = uint8_t;
  static constexpr bool kPairwise = false;
  static Acc Identity() { return 1; }
  static Acc Combine(Acc a, Acc b) { return a & b; }
};

// ---------------------------------------------------------------------------------------------
// Reduction passes

// Independent accumulators per contiguous row: enough to fill a vector register and to hide the
// latency of floating-point adds.
constexpr int64_t kLanes = 8;
// Pairwise summation splits rows longer than this.
constexpr int64_t kPairwiseBlock = 1024;
// Columns accumulated together when Q > 1 (the accumulators stay in L1).
constexpr int64_t kColumnBlock = 512;
// Elements per unit of parallel work when a few long rows must be split.
constexpr int64_t kChunkElements = 1 << 16;
// With fewer independent output blocks than this, long rows are split into chunks...
constexpr int64_t kMinParallelUnits = 16;
// ...but into no more chunks than this, which bounds the memory of the partial results.
constexpr int64_t kMaxChunks = 64;

template <typename Red, typename In>
typename Red::Acc ReduceContiguous(const In* x, int64_t n) {
  using Acc = typename Red::Acc;
  if (Red::kPairwise && n > kPairwiseBlock) {
    int64_t half = (n / 2 + kLanes - 1) / kLanes * kLanes;
    return Red::Combine(ReduceContiguous<Red>(x, half), ReduceContiguous<Red>(x + half, n - half));
  }
  Acc lanes[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) lanes[l] = Red::Identity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] = Red::Combine(lanes[l], Acc(x[i + l]));
  }
  Acc result = Red::Identity();
  for (int64_t l = 0; l < kLanes; ++l) result = Red::Combine(result, lanes[l]);
  for (; i < n; ++i) result = Red::Combine(result, Acc(x[i]));
  return result;
}

// acc[j] = Combine(acc[j], x[r * stride + j]) for r < rows, j < cols.
template <typename Red, typename In>
void ReduceColumns(const In* x, int64_t rows, int64_t stride, int64_t cols,
                   typename Red::Acc* acc) {
  using Acc = typename Red::Acc;
  for (int64_t r = 0; r < rows; ++r) {
    const In* row = x + r * stride;
    for (int64_t j = 0; j < cols; ++j) acc[j] = Red::Combine(acc[j], Acc(row[j]));
  }
}

// out[p, q] = finish(reduce over r of in[p, r, q]) for an input viewed as [P, R, Q].
template <typename Red, typename In, typename Out, typename Finish>
Status ReducePass(KernelContext& ctx, const In* in, int64_t P, int64_t R, int64_t Q, Out* out,
                  Finish finish) {
  using Acc = typename Red::Acc;
  const int64_t col_block = std::min(Q, kColumnBlock);
  const int64_t col_blocks = (Q + col_block - 1) / col_block;
  const int64_t outputs = P * col_blocks;
  // Split R into chunks when there are too few independent outputs to keep threads busy. The
  // chunk length depends on the shape alone, so the result does not depend on the thread count.
  int64_t chunk = R;
  if (outputs < kMinParallelUnits && R * col_block > 2 * kChunkElements) {
    chunk = std::max({kChunkElements / col_block, kLanes, (R + kMaxChunks - 1) / kMaxChunks});
  }
  const int64_t chunks = R == 0 ? 1 : (R + chunk - 1) / chunk;

  // Reduces chunk c of output block u into acc[0, cols).
  auto reduce_unit = [&](int64_t u, int64_t c, Acc* acc) {
    int64_t p = u / col_blocks, q0 = (u % col_blocks) * col_block;
    int64_t cols = std::min(col_block, Q - q0);
    int64_t r0 = c * chunk, rows = std::min(chunk, R - r0);
    const In* base = in + (p * R + r0) * Q + q0;
    if (Q == 1) {
      acc[0] = ReduceContiguous<Red>(base, rows);
    } else {
      std::fill(acc, acc + cols, Red::Identity());
      ReduceColumns<Red>(base, rows, Q, cols, acc);
    }
  };
  auto store = [&](int64_t u, const Acc* acc) {
    int64_t p = u / col_blocks, q0 = (u % col_blocks) * col_block;
    int64_t cols = std::min(col_block, Q - q0);
    Out* dst = out + p * Q + q0;
    for (int64_t j = 0; j < cols; ++j) dst[j] = finish(acc[j]);
  };

  if (chunks == 1) {
    ctx.ParallelFor(outputs, std::max<int64_t>(R * col_block, 1), [&](int64_t begin, int64_t end) {
      std::vector<Acc> acc(col_block);
      for (int64_t u = begin; u < end; ++u) {
        if (ctx.cancelled()) return;  // the run discards the output
        reduce_unit(u, 0, acc.data());
        store(u, acc.data());
      }
    });
    return ctx.CheckCancelled();
  }
  // Partial results per (output block, chunk), combined in chunk order afterwards.
  std::vector<Acc> partial(outputs * chunks * col_block);
  ctx.ParallelFor(outputs * chunks, chunk * col_block, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      if (ctx.cancelled()) return;  // the partial results are discarded below
      reduce_unit(w / chunks, w % chunks, partial.data() + w * col_block);
    }
  });
  FS_RETURN_IF_ERROR(ctx.CheckCancelled());
  std::vector<Acc> acc(col_block);
  for (int64_t u = 0; u < outputs; ++u) {
    std::fill(acc.begin(), acc.end(), Red::Identity());
    for (int64_t c = 0; c < chunks; ++c) {
      const Acc* part = partial.data() + (u * chunks + c) * col_block;
      for (int64_t j = 0; j < col_block; ++j) acc[j] = Red::Combine(acc[j], part[j]);
    }
    store(u, acc.data());
  }
  return Status::OK();
}

struct Group {
  int64_t size;
  bool reduced;
};

// The canonical view of `shape` (see the top of the file). Always holds a reduced group.
std::vector<Group> CanonicalGroups(const TensorShape& shape, const std::vector<bool>& reduced) {
  std::vector<Group> groups;
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape.dim(i) == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduced[i]) {
      groups.back().size *= shape.dim(i);
    } else {
      groups.push_back({shape.dim(i), reduced[i]});
    }
  }
  // Nothing to reduce: a single pass over R = 1 copies (and finishes, e.g. casts) the input.
  bool any_reduced =
      std::any_of(groups.begin(), groups.end(), [](const Group& g) { return g.reduced; });
  if (!any_reduced) groups.push_back({1, true});
  return groups;
}

// Reduces `input` into `output`; `finish` maps the final accumulator to the output value.
template <typename Red, typename T, typename Finish>
Status RunReduction(KernelContext& ctx, const Tensor& input, const std::vector<bool>& reduced,
                    Tensor* output, Finish finish) {
  using Acc = typename Red::Acc;
  T* out = output->data<T>();
  if (output->num_elements() == 0) return Status::OK();
  if (input.num_elements() == 0) {
    // Only reduced dimensions can be empty here: every output is the reduction of nothing.
    std::fill(out, out + output->num_elements(), finish(Red::Identity()));
    return Status::OK();
  }
  std::vector<Group> groups = CanonicalGroups(input.shape(), reduced);
  const void* current = input.raw_data();  // T for the first pass, Acc afterwards
  bool first = true;
  Tensor scratch;
  for (;;) {
    int g = static_cast<int>(groups.size()) - 1;
    while (!groups[g].reduced) --g;
    int64_t P = 1, Q = 1;
    for (int i = 0; i < g; ++i) P *= groups[i].size;
    for (size_t i = g + 1; i < groups.size(); ++i) Q *= groups[i].size;
    int64_t R = groups[g].size;
    bool last =
        std::none_of(groups.begin(), groups.begin() + g, [](const Group& x) { return x.reduced; });
    if (last) {
      return first ? ReducePass<Red>(ctx, static_cast<const T*>(current), P, R, Q, out, finish)
                   : ReducePass<Red>(ctx, static_cast<const Acc*>(current), P, R, Q, out, finish);
    }
    // An intermediate pass keeps full accumulator precision.
    Tensor next;
    FS_RETURN_IF_ERROR(ctx.AllocateTemp(
        DType::kUInt8, TensorShape{P * Q * static_cast<int64_t>(sizeof(Acc))}, &next));
    Acc* next_data = static_cast<Acc*>(next.raw_data());
    auto keep = [](Acc a) { return a; };
    FS_RETURN_IF_ERROR(
        first ? ReducePass<Red>(ctx, static_cast<const T*>(current), P, R, Q, next_data, keep)
              : ReducePass<Red>(ctx, static_cast<const Acc*>(current), P, R, Q, next_data, keep));
    scratch = std::move(next);
    current = scratch.raw_data();
    first = false;
    // The kept groups on both sides of the reduced one are now adjacent: merge them.
    groups[g - 1].size *= Q;
    groups.resize(g);
  }
}

// ---------------------------------------------------------------------------------------------
// Kernels

// True when every reduced axis has size 1 (or none is reduced): each output element is then the
// reduction of exactly one input element.
bool ReducesNothing(const TensorShape& shape, const std::vector<bool>& reduced) {
  for (int i = 0; i < shape.rank(); ++i) {
    if (reduced[i] && shape.dim(i) != 1) return false;
  }
  return true;
}

enum class ReduceKind { kSum, kMean, kProd, kMax, kMin, kAny, kAll };

template <ReduceKind kKind>
class ReductionKernel final : public OpKernel {
 public:
  explicit ReductionKernel(const Node& node) : OpKernel(node) {}

  Status Init() override {
    keep_dims_ = node().attrs().GetOr<bool>("keep_dims", false);
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const Tensor& input = ctx.input(0);
    std::vector<bool> reduced;
    FS_RETURN_IF_ERROR(ReadReductionAxes(ctx.input(1), input.rank(), &reduced));
    const TensorShape shape(ReducedDims(input.shape().dims(), reduced, keep_dims_));
    if (ReducesNothing(input.shape(), reduced)) {
      // Every output is its one input element, unchanged by any of the reductions, so the output
      // shares the input's buffer, as TensorFlow's kernels do. The gradients of broadcasting ops
      // emit such reductions whenever the shapes are known only at run time.
      ctx.SetOutput(0, input.Reshaped(shape));
      return Status::OK();
    }
    Tensor* output;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &output));
    if constexpr (kKind == ReduceKind::kAny) {
      return RunReduction<AnyReducer, bool>(ctx, input, reduced, output,
                                            [](uint8_t a) { return a != 0; });
    } else if constexpr (kKind == ReduceKind::kAll) {
      return RunReduction<AllReducer, bool>(ctx, input, reduced, output,
                                            [](uint8_t a) { return a != 0; });
    } else {
      return ComputeArithmetic(ctx, input, reduced, output);
    }
  }

 private:
  Status ComputeArithmetic(KernelContext& ctx, const Tensor& input,
                           const std::vector<bool>& reduced, Tensor* output) {
    int64_t count = 1;  // elements reduced into each output, for Mean
    for (int i = 0; i < input.rank(); ++i) {
      if (reduced[i]) count *= input.dim(i);
    }
    return DispatchDType<float, double, int32_t, int64_t, uint8_t, complex64, complex128>(
        input.dtype(), node().type().c_str(), [&]<typename T>() -> Status {
          if constexpr ((kKind == ReduceKind::kMax || kKind == ReduceKind::kMin) && kIsComplex<T>) {
            // Unreachable: the schema of Max and Min has no complex types.
            return errors::InvalidArgument(node().type(), " has no kernel for complex numbers");
          } else if constexpr (kKind == ReduceKind::kSum) {
            return RunReduction<SumReducer<T>, T>(ctx, input, reduced, output,
                                                  [](WideAcc<T> a) { return T(a); });
          } else if constexpr (kKind == ReduceKind::kMean) {
            return RunReduction<SumReducer<T, MeanAcc<T>>, T>(
                ctx, input, reduced, output, [count](MeanAcc<T> a) { return MeanOf<T>(a, count); });
          } else if constexpr (kKind == ReduceKind::kProd) {
            return RunReduction<ProdReducer<T>, T>(ctx, input, reduced, output,
                                                   [](WideAcc<T> a) { return T(a); });
          } else if constexpr (kKind == ReduceKind::kMax) {
            return RunReduction<MaxReducer<T>, T>(ctx, input, reduced, output,
                                                  [](T a) { return a; });
          } else {
            return RunReduction<MinReducer<T>, T>(ctx, input, reduced, output,
                                                  [](T a) { return a; });
          }
        });
  }

  // Floats divide (0 / 0 gives NaN for an empty mean); integers divide with truncation, as
  // TensorFlow does, and the mean of nothing is 0 rather than a division by zero.
  template <typename T>
  static T MeanOf(MeanAcc<T> sum, int64_t count) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(sum / static_cast<MeanAcc<T>>(count));
    } else if constexpr (kIsComplex<T>) {
      return static_cast<T>(sum / static_cast<typename MeanAcc<T>::value_type>(count));
    } else {
      return count == 0 ? T(0) : static_cast<T>(sum / count);
    }
  }

  bool keep_dims_ = false;
};

// ---------------------------------------------------------------------------------------------
// Gradients (TensorFlow's formulas)

AttrMap KeepDims() {
  AttrMap attrs;
  attrs.Set("keep_dims", true);
  return attrs;
}

Endpoint Int32Vector(GradientContext& ctx, const std::vector<int32_t>& values) {
  return ctx.Const(Tensor::FromVector(values, TensorShape{static_cast<int64_t>(values.size())}));
}

Endpoint CastTo(GradientContext& ctx, Endpoint x, DType dtype) {
  AttrMap attrs;
  attrs.Set("DstT", dtype);
  return ctx.Op("Cast", {x}, attrs);
}

// Which axes of the input x a reduction reduced: known while building when the axes are a constant
// and x's rank is known (the usual case), else computed at run time as a bool vector.
struct ReducedAxes {
  bool known = false;
  std::vector<bool> reduced;  // when known
  Endpoint is_reduced;        // when not
};

ReducedAxes ReducedAxesOf(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  const PartialShape& shape = x.node->output_shape(x.index);
  const Node& axes_node = *ctx.input(1).node;
  const AttrValue* value = axes_node.type() == "Const" ? axes_node.attrs().Find("value") : nullptr;
  ReducedAxes axes;
  if (value != nullptr && shape.known_rank() &&
      ReadReductionAxes(std::get<Tensor>(*value), shape.rank(), &axes.reduced).ok()) {
    axes.known = true;
    return axes;
  }
  // Axis i is reduced when some entry of the axes equals i modulo the rank.
  Endpoint rank = ctx.Op("Rank", {x});
  Endpoint list = ctx.input(1);
  if (ctx.input_type(1) != DType::kInt32) list = CastTo(ctx, list, DType::kInt32);
  list = ctx.Op("FloorMod", {ctx.Op("Reshape", {list, Int32Vector(ctx, {-1})}), rank});
  Endpoint zero = ctx.Const(Tensor::Scalar<int32_t>(0));
  Endpoint one = ctx.Const(Tensor::Scalar<int32_t>(1));
  Endpoint column = ctx.Op("ExpandDims", {ctx.Op("Range", {zero, rank, one}), one});
  Endpoint hits = CastTo(ctx, ctx.Op("Equal", {column, list}), DType::kInt32);  // [rank, axes]
  axes.is_reduced = ctx.Op("Greater", {ctx.Op("Sum", {hits, one}), zero});
  return axes;
}

// x's dimensions as an int32 vector, with 1 in place of the reduced ones (`ones_where_reduced`:
// the shape of the reduction's output with its dimensions kept, which broadcasts against x) or
// in place of the others (the Tile multiples that expand such an output back to x's shape).
// Constant where the shapes allow.
Endpoint DimsOrOnes(GradientContext& ctx, const ReducedAxes& axes, bool ones_where_reduced) {
  const Endpoint x = ctx.input(0);
  if (!axes.known) {
    Endpoint dims = ctx.Shape(x);
    Endpoint ones = ctx.Op("OnesLike", {dims});
    return ones_where_reduced ? ctx.Op("SelectV2", {axes.is_reduced, ones, dims})
                              : ctx.Op("SelectV2", {axes.is_reduced, dims, ones});
  }
  const PartialShape& shape = x.node->output_shape(x.index);
  const int rank = shape.rank();
  std::vector<int32_t> values(rank);
  Tensor is_one = Tensor::Host(DType::kBool, TensorShape{rank});
  bool all_known = true, any_one = false;
  for (int i = 0; i < rank; ++i) {
    const bool one = axes.reduced[i] == ones_where_reduced;
    is_one.data<bool>()[i] = one;
    values[i] = one ? 1 : static_cast<int32_t>(shape.dim(i));
    all_known = all_known && values[i] >= 0;
    any_one = any_one || one;
  }
  if (all_known) return Int32Vector(ctx, values);
  if (!any_one) return ctx.Shape(x);
  return ctx.Op("SelectV2",
                {ctx.Const(is_one), Int32Vector(ctx, std::vector<int32_t>(rank, 1)), ctx.Shape(x)});
}

// True when x's shape is known and the same as the gradient's: nothing was reduced away.
bool SameStaticShape(GradientContext& ctx, Endpoint grad) {
  if (!ctx.status().ok()) return false;
  const Endpoint x = ctx.input(0);
  const PartialShape& xs = x.node->output_shape(x.index);
  return xs.IsFullyDefined() && xs == grad.node->output_shape(grad.index);
}

// `outputs` (the reduction's result or its gradient) with the reduced dimensions kept as 1, so
// that they broadcast against x.
void KeepDimsOf(GradientContext& ctx, std::initializer_list<Endpoint*> outputs) {
  if (ctx.attrs().GetOr<bool>("keep_dims", false)) return;
  Endpoint kept = DimsOrOnes(ctx, ReducedAxesOf(ctx), true);
  for (Endpoint* e : outputs) *e = ctx.Op("Reshape", {*e, kept});
}

// Sum: every input element contributes once to its output element, so the gradient is the output
// gradient copied back over the reduced axes.
Endpoint ExpandGrad(GradientContext& ctx, Endpoint grad) {
  if (SameStaticShape(ctx, grad)) return grad;
  ReducedAxes axes = ReducedAxesOf(ctx);
  Endpoint kept = ctx.Op("Reshape", {grad, DimsOrOnes(ctx, axes, true)});
  return ctx.Op("Tile", {kept, DimsOrOnes(ctx, axes, false)});
}

Status SumGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ExpandGrad(ctx, ctx.output_grad(0)));
  return Status::OK();
}

// Mean: Sum's gradient divided by the number of elements averaged into each output, which is
// size(input) / size(output) (computed at run time unless both shapes are known).
Status MeanGrad(GradientContext& ctx) {
  Endpoint grad = ctx.output_grad(0);
  const Endpoint x = ctx.input(0);
  const PartialShape& in_shape = x.node->output_shape(x.index);
  const PartialShape& out_shape = ctx.node().output_shape(0);
  const DType dtype = ctx.input_type(0);
  Endpoint count;
  if (in_shape.IsFullyDefined() && out_shape.IsFullyDefined()) {
    int64_t in_size = 1, out_size = 1;
    for (int64_t d : in_shape.dims()) in_size *= d;
    for (int64_t d : out_shape.dims()) out_size *= d;
    count = ctx.ScalarLike(grad, static_cast<double>(in_size / std::max<int64_t>(out_size, 1)));
  } else {
    AttrMap int64_size;
    int64_size.Set("out_type", DType::kInt64);
    Endpoint in_size = ctx.Op("Size", {x}, int64_size);
    Endpoint out_size = ctx.Op("Size", {ctx.output(0)}, int64_size);
    Endpoint one = ctx.Const(Tensor::Scalar<int64_t>(1));
    count = CastTo(ctx, ctx.Op("FloorDiv", {in_size, ctx.Op("Maximum", {out_size, one})}), dtype);
  }
  // Dividing before expanding touches each output element once instead of each input element.
  ctx.SetInputGrad(0, ExpandGrad(ctx, ctx.Op("RealDiv", {grad, count})));
  return Status::OK();
}

// Max and Min: the gradient goes to the input elements equal to the result, split evenly between
// ties.
Status MinOrMaxGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  Endpoint y = ctx.output(0), grad = ctx.output_grad(0);
  KeepDimsOf(ctx, {&y, &grad});
  Endpoint selected = CastTo(ctx, ctx.Op("Equal", {y, x}), ctx.input_type(0));
  Endpoint ties = ctx.Op("Sum", {selected, ctx.input(1)}, KeepDims());
  ctx.SetInputGrad(0, ctx.Op("Mul", {selected, ctx.Op("RealDiv", {grad, ties})}));
  return Status::OK();
}

// Prod: d(prod)/dx_i is the product of the other elements. Without zeros that is prod / x_i.
// With zeros, let P be the product of the non-zero elements and Z the number of zeros: a zero
// element gets P when it is the only zero, a non-zero element gets P / x_i when there is no zero,
// and everything else gets 0 (a product with two zeros stays 0 whichever element moves). All
// cases are "P / x_i (zeros counted as 1) where Z equals [x_i == 0], else 0". TensorFlow reaches
// the same values with exclusive cumulative products; this form needs only elementwise ops and
// reductions.
Status ProdGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  const Endpoint axes = ctx.input(1);
  Endpoint grad = ctx.output_grad(0);
  KeepDimsOf(ctx, {&grad});
  Endpoint is_zero = ctx.Op("Equal", {x, ctx.ScalarLike(x, 0)});
  Endpoint zero_flag = CastTo(ctx, is_zero, ctx.input_type(0));
  Endpoint zeros = ctx.Op("Sum", {zero_flag, axes}, KeepDims());
  Endpoint non_zero = ctx.Op("SelectV2", {is_zero, ctx.ScalarLike(x, 1), x});
  Endpoint others = ctx.Op("RealDiv", {ctx.Op("Prod", {non_zero, axes}, KeepDims()), non_zero});
  Endpoint live = CastTo(ctx, ctx.Op("Equal", {zeros, zero_flag}), ctx.input_type(0));
  // Complex inputs get the conjugate of the derivative, as TensorFlow's complex gradients do.
  ctx.SetInputGrad(0, ctx.Op("Mul", {ctx.Op("Mul", {live, ctx.ConjIfComplex(others)}), grad}));
  return Status::OK();
}

// The five reductions share one schema; Sum, Mean and Prod also take complex numbers.
template <ReduceKind kKind>
OpBuilder ReductionOp(const char* name, GradFn grad, const char* doc) {
  constexpr bool kOrdered = kKind == ReduceKind::kMax || kKind == ReduceKind::kMin;
  OpBuilder builder(name);
  builder.Input("input", "T")
      .Input("reduction_indices", "Tidx")
      .Output("output", "T")
      .TypeAttr("T", kOrdered ? kNumericTypes : kNumericAndComplexTypes)
      .TypeAttr("Tidx", {DType::kInt32, DType::kInt64}, DType::kInt32)
      .Attr("keep_dims", false)
      .Shape(ReductionShape)
      .KernelClass<ReductionKernel<kKind>>("CPU")
      .Gradient(grad)
      .Doc(doc);
  return builder;
}

FS_REGISTER_OP(ReductionOp<ReduceKind::kSum>("Sum", SumGrad,
                                             "Sum of elements across the given axes."));
FS_REGISTER_OP(ReductionOp<ReduceKind::kMean>("Mean", MeanGrad,
                                              "Mean of elements across the given axes."));
FS_REGISTER_OP(ReductionOp<ReduceKind::kProd>("Prod", ProdGrad,
                                              "Product of elements across the given axes."));
FS_REGISTER_OP(ReductionOp<ReduceKind::kMax>("Max", MinOrMaxGrad,
                                             "Maximum of elements across the given axes."));
FS_REGISTER_OP(ReductionOp<ReduceKind::kMin>("Min", MinOrMaxGrad,
                                             "Minimum of elements across the given axes."));

// Any and All take and give bools; TensorFlow defines no gradient for them.
OpBuilder LogicalReductionOp(OpBuilder builder) {
  builder.Input("input", "bool")
      .Input("reduction_indices", "Tidx")
      .Output("output", "bool")
      .TypeAttr("Tidx", {DType::kInt32, DType::kInt64}, DType::kInt32)
      .Attr("keep_dims", false)
      .Shape(ReductionShape)
      .NotDifferentiable();
  return builder;
}

FS_REGISTER_OP(LogicalReductionOp(OpBuilder("Any"))
                   .KernelClass<ReductionKernel<ReduceKind::kAny>>("CPU")
                   .Doc("Logical or of elements across the given axes."));
FS_REGISTER_OP(LogicalReductionOp(OpBuilder("All"))
                   .KernelClass<ReductionKernel<ReduceKind::kAll>>("CPU")
                   .Doc("Logical and of elements across the given axes."));

// ---------------------------------------------------------------------------------------------
// ArgMax / ArgMin

Status ReadArgAxis(const Tensor& dimension, int rank, int* axis) {
  if (dimension.rank() != 0) {
    return errors::InvalidArgument("dimension must be a scalar, but has shape ",
                                   dimension.shape().ToString());
  }
  int64_t d = dimension.ElementAsInt64(0);
  if (d < -rank || d >= rank) {
    return errors::InvalidArgument("Expected dimension in the range [", -rank, ", ", rank,
                                   "), but got ", d);
  }
  *axis = static_cast<int>(d < 0 ? d + rank : d);
  return Status::OK();
}

Status ArgReductionShape(InferenceContext& ctx) {
  const PartialShape& input = ctx.input(0);
  PartialShape dim_shape;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 0, &dim_shape));
  if (!input.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  const Tensor* dimension = ctx.input_value(1);
  if (dimension == nullptr) {
    if (input.rank() == 0) {
      return errors::InvalidArgument(
          "Expected dimension in the range [0, 0): a scalar has no "
          "axis to take the arg max/min along");
    }
    ctx.set_output(0, PartialShape::UnknownOfRank(input.rank() - 1));
    return Status::OK();
  }
  int axis;
  FS_RETURN_IF_ERROR(ReadArgAxis(*dimension, input.rank(), &axis));
  std::vector<int64_t> dims = input.ToVector();
  dims.erase(dims.begin() + axis);
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// True when `v` should replace `best`: strictly better (so ties keep the first index), or the
// first NaN, which wins as in numpy.
template <bool kMax, typename T>
bool Better(T v, T best) {
  if constexpr (std::is_floating_point_v<T>) {
    if (v != v) return best == best;
  }
  return kMax ? v > best : v < best;
}

template <bool kMax, typename T, typename Index>
void ArgReduce(KernelContext& ctx, const T* in, int64_t P, int64_t R, int64_t Q, Index* out) {
  const int64_t col_block = std::min(Q, kColumnBlock);
  const int64_t col_blocks = (Q + col_block - 1) / col_block;
  ctx.ParallelFor(P * col_blocks, R * col_block, [&](int64_t begin, int64_t end) {
    std::vector<T> best(col_block);
    for (int64_t u = begin; u < end; ++u) {
      int64_t p = u / col_blocks, q0 = (u % col_blocks) * col_block;
      int64_t cols = std::min(col_block, Q - q0);
      const T* base = in + p * R * Q + q0;
      Index* dst = out + p * Q + q0;
      std::copy(base, base + cols, best.begin());
      std::fill(dst, dst + cols, Index(0));
      for (int64_t r = 1; r < R; ++r) {
        const T* row = base + r * Q;
        for (int64_t j = 0; j < cols; ++j) {
          if (Better<kMax>(row[j], best[j])) {
            best[j] = row[j];
            dst[j] = static_cast<Index>(r);
          }
        }
      }
    }
  });
}

template <bool kMax>
Status ArgReductionKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  int axis;
  FS_RETURN_IF_ERROR(ReadArgAxis(ctx.input(1), input.rank(), &axis));
  std::vector<int64_t> dims = input.shape().ToVector();
  if (dims[axis] == 0) {
    return errors::InvalidArgument("Reduction axis ", axis, " is empty in shape ",
                                   input.shape().ToString(),
                                   ": there is no element to take the arg max/min of");
  }
  int64_t P = 1, Q = 1, R = dims[axis];
  for (int i = 0; i < axis; ++i) P *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i) Q *= dims[i];
  dims.erase(dims.begin() + axis);
  Tensor* output;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(dims), &output));
  if (output->num_elements() == 0) return Status::OK();
  bool int32_out = ctx.output_type(0) == DType::kInt32;
  return DispatchDType<float, double, int32_t, int64_t, uint8_t>(
      input.dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        if (int32_out) {
          ArgReduce<kMax>(ctx, input.data<T>(), P, R, Q, output->data<int32_t>());
        } else {
          ArgReduce<kMax>(ctx, input.data<T>(), P, R, Q, output->data<int64_t>());
        }
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("ArgMax")
                   .Input("input", "T")
                   .Input("dimension", "Tidx")
                   .Output("output", "output_type")
                   .TypeAttr("T", kNumericTypes)
                   .TypeAttr("Tidx", {DType::kInt32, DType::kInt64}, DType::kInt32)
                   .TypeAttr("output_type", {DType::kInt32, DType::kInt64}, DType::kInt64)
                   .Shape(ArgReductionShape)
                   .Kernel("CPU", ArgReductionKernel<true>)
                   .NotDifferentiable()
                   .Doc("Index of the largest value along an axis (the first one on ties)."));

FS_REGISTER_OP(OpBuilder("ArgMin")
                   .Input("input", "T")
                   .Input("dimension", "Tidx")
                   .Output("output", "output_type")
                   .TypeAttr("T", kNumericTypes)
                   .TypeAttr("Tidx", {DType::kInt32, DType::kInt64}, DType::kInt32)
                   .TypeAttr("output_type", {DType::kInt32, DType::kInt64}, DType::kInt64)
                   .Shape(ArgReductionShape)
                   .Kernel("CPU", ArgReductionKernel<false>)
                   .NotDifferentiable()
                   .Doc("Index of the smallest value along an axis (the first one on ties)."));

}  // namespace
}  // namespace flowstone
