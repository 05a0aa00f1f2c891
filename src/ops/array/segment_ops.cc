// Segment reductions: rows of data are reduced by segment id into output rows.
//   Segment{Sum,Mean,Max,Min,Prod}(data, segment_ids): ids sorted, one per data row; the output
//     has last_id + 1 rows (tf.math.segment_sum, ...).
//   UnsortedSegment{Max,Min,Prod}(data, segment_ids, num_segments): ids in any order, of any
//     shape prefixing data's; negative ids drop their row (tf.math.unsorted_segment_max, ...;
//     UnsortedSegmentSum is in slice_ops.cc, beside GatherV2 whose gradient it is).
//   SparseSegment{Sum,Mean,SqrtN}(data, indices, segment_ids): row indices[k] of data goes to
//     segment segment_ids[k] (sorted) (tf.sparse.segment_sum, ...).
// One kernel template serves every row of the table: it maps input rows to segments, then
// reduces each output column over its rows in order, so results do not depend on the threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array/scatter_util.h"
#include "ops/array_util.h"
#include "ops/elementwise.h"
#include "ops/segment_util.h"

namespace flowstone {
namespace {

using array_util::DimProduct;
using array_util::IndexConst;
using array_util::IndexScalar;
using array_util::IntValues;
using array_util::kIndexTypes;
using segment_util::UnsortedSegmentShape;

enum class Reduce { kSum, kMean, kSqrtN, kProd, kMax, kMin };
enum class Kind { kSorted, kUnsorted, kSparse };

// --- Shapes ----------------------------------------------------------------------------------

// Sorted and sparse ops: [?] + data.shape[1:]; ids (and indices) are vectors.
Status SortedSegmentShape(InferenceContext& ctx) {
  PartialShape unused;
  const int ids_input = ctx.num_inputs() - 1;
  FS_RETURN_IF_ERROR(ctx.WithRank(ids_input, 1, &unused));
  if (ctx.num_inputs() == 3) FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(0, 1));
  const PartialShape& data = ctx.input(0);
  if (!data.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (ctx.num_inputs() == 3) {
    int64_t rows;
    FS_RETURN_IF_ERROR(ctx.MergeDim(ctx.input(1).dim(0), ctx.input(2).dim(0), &rows));
  } else if (ctx.input(1).dim(0) >= 0 && data.dim(0) >= 0 && ctx.input(1).dim(0) != data.dim(0)) {
    return errors::InvalidArgument(
        "segment_ids should be the same size as dimension 0 of data, "
        "but got ",
        ctx.input(1).dim(0), " ids for ", data.dim(0), " rows");
  }
  std::vector<int64_t> dims = {-1};
  for (int i = 1; i < data.rank(); ++i) dims.push_back(data.dim(i));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// --- Kernel ----------------------------------------------------------------------------------

// Which data row feeds which output segment (-1: dropped), and how many segments there are.
struct RowMap {
  std::vector<int64_t> source;   // data row of entry k
  std::vector<int64_t> segment;  // its segment, or -1
  int64_t num_segments = 0;
  int ids_rank = 1;  // data dims consumed by the ids
};

// Sorted ids: non-negative and non-decreasing.
Status CheckSorted(const std::vector<int64_t>& ids) {
  for (size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] < 0) {
      return errors::InvalidArgument("segment_ids[", k, "] = ", ids[k],
                                     " is negative; segment ids must be >= 0");
    }
    if (k > 0 && ids[k] < ids[k - 1]) {
      return errors::InvalidArgument("segment ids are not increasing: segment_ids[", k,
                                     "] = ", ids[k], " follows segment_ids[", k - 1,
                                     "] = ", ids[k - 1],
                                     "; sort them, or use the unsorted_segment_* ops");
    }
  }
  return Status::OK();
}

Status MapRows(KernelContext& ctx, Kind kind, RowMap* map) {
  const Tensor& data = ctx.input(0);
  if (data.rank() < 1) {
    return errors::InvalidArgument("data must be at least rank 1, got shape ",
                                   data.shape().ToString());
  }
  if (kind == Kind::kUnsorted) {
    const Tensor& ids = ctx.input(1);
    int64_t num_segments = 0;
    FS_RETURN_IF_ERROR(
        segment_util::CheckUnsortedSegmentInputs(data, ids, ctx.input(2), &num_segments));
    map->segment = IntValues(ids);
    for (size_t k = 0; k < map->segment.size(); ++k) {
      if (map->segment[k] >= num_segments) {
        return scatter_util::IndexOutOfRange("segment_ids", ids.shape(), static_cast<int64_t>(k),
                                             map->segment[k], num_segments);
      }
    }
    map->source.resize(map->segment.size());
    for (size_t k = 0; k < map->source.size(); ++k) map->source[k] = static_cast<int64_t>(k);
    map->num_segments = num_segments;
    map->ids_rank = ids.rank();
    return Status::OK();
  }
  const Tensor& ids = ctx.input(ctx.num_inputs() - 1);
  if (ids.rank() != 1) {
    return errors::InvalidArgument("segment_ids must be a vector, got shape ",
                                   ids.shape().ToString());
  }
  map->segment = IntValues(ids);
  FS_RETURN_IF_ERROR(CheckSorted(map->segment));
  if (kind == Kind::kSorted) {
    if (ids.dim(0) != data.dim(0)) {
      return errors::InvalidArgument(
          "segment_ids should be the same size as dimension 0 of data"
          ", but got ",
          ids.dim(0), " ids for data of shape ", data.shape().ToString());
    }
    map->source.resize(map->segment.size());
    for (size_t k = 0; k < map->source.size(); ++k) map->source[k] = static_cast<int64_t>(k);
  } else {
    const Tensor& indices = ctx.input(1);
    if (indices.rank() != 1 || indices.dim(0) != ids.dim(0)) {
      return errors::InvalidArgument("indices must be a vector with one entry per segment id (",
                                     ids.dim(0), "), got shape ", indices.shape().ToString());
    }
    FS_RETURN_IF_ERROR(scatter_util::CheckedIndices(indices, data.dim(0), "indices", &map->source));
  }
  if (!map->segment.empty() && map->segment.back() == std::numeric_limits<int64_t>::max()) {
    // One more than the largest id would overflow.
    return errors::InvalidArgument("segment id ", map->segment.back(),
                                   " is too large: the output would need that many + 1 rows");
  }
  map->num_segments = map->segment.empty() ? 0 : map->segment.back() + 1;
  return Status::OK();
}

template <Reduce R, typename T>
T Identity() {
  if constexpr (R == Reduce::kProd) return T(1);
  if constexpr (R == Reduce::kMax) return std::numeric_limits<T>::lowest();
  if constexpr (R == Reduce::kMin) return std::numeric_limits<T>::max();
  return T(0);
}

// Integer sums and products wrap around on overflow (WrapAdd, WrapMul), as in TensorFlow.
template <Reduce R, typename T>
T Combine(T acc, T x) {
  if constexpr (R == Reduce::kProd) return WrapMul(acc, x);
  if constexpr (R == Reduce::kMax) return std::max(acc, x);
  if constexpr (R == Reduce::kMin) return std::min(acc, x);
  return WrapAdd(acc, x);
}

// Output row s reduces the data rows mapped to s, in order; an empty segment gets the
// reduction's identity (0 for sums and means, 1 for products), except that sorted max/min give
// 0 where the unsorted ones give the dtype's lowest/largest value, as in TensorFlow.
template <Reduce R, Kind K>
Status SegmentKernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  RowMap map;
  FS_RETURN_IF_ERROR(MapRows(ctx, K, &map));
  std::vector<int64_t> out_dims = {map.num_segments};
  for (int i = map.ids_rank; i < data.rank(); ++i) out_dims.push_back(data.dim(i));
  TensorShape out_shape;
  FS_RETURN_IF_ERROR(scatter_util::CheckedShape(out_dims, &out_shape));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  if (out->num_elements() == 0) return Status::OK();
  const int64_t inner = DimProduct(data.shape(), map.ids_rank, data.rank());
  std::vector<int64_t> counts(static_cast<size_t>(map.num_segments), 0);
  for (int64_t s : map.segment) {
    if (s >= 0) ++counts[s];
  }
  // Max, Min and SqrtN take no complex numbers (their schemas say so).
  constexpr bool kRealOnly = R == Reduce::kMax || R == Reduce::kMin || R == Reduce::kSqrtN;
  return DispatchDType<float, double, int32_t, int64_t, uint8_t, complex64, complex128>(
      data.dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        if constexpr (kIsComplex<T> && kRealOnly) {
          return errors::InvalidArgument(ctx.node().type(), " has no kernel for complex numbers");
        } else {
          T* dst = out->data<T>();
          const T* src = data.data<T>();
          const int64_t rows = static_cast<int64_t>(map.segment.size());
          // Threads take disjoint columns, so each element is reduced in row order by one thread.
          ctx.ParallelFor(inner, rows + map.num_segments, [&](int64_t begin, int64_t end) {
            for (int64_t s = 0; s < map.num_segments; ++s) {
              std::fill(dst + s * inner + begin, dst + s * inner + end, Identity<R, T>());
            }
            for (int64_t k = 0; k < rows; ++k) {
              if (map.segment[k] < 0) continue;
              T* o = dst + map.segment[k] * inner;
              const T* row = src + map.source[k] * inner;
              for (int64_t c = begin; c < end; ++c) o[c] = Combine<R, T>(o[c], row[c]);
            }
            for (int64_t s = 0; s < map.num_segments; ++s) {
              T* o = dst + s * inner;
              const int64_t n = counts[s];
              for (int64_t c = begin; c < end; ++c) {
                if constexpr (K == Kind::kSorted && (R == Reduce::kMax || R == Reduce::kMin)) {
                  if (n == 0) o[c] = T(0);
                } else if constexpr (R == Reduce::kMean) {
                  if (n > 0) o[c] = static_cast<T>(o[c] / static_cast<T>(n));
                } else if constexpr (R == Reduce::kSqrtN) {
                  if (n > 0) o[c] = static_cast<T>(o[c] / std::sqrt(static_cast<double>(n)));
                }
              }
            }
          });
          return Status::OK();
        }
      });
}

// --- Gradients -------------------------------------------------------------------------------

Endpoint Gather(GradientContext& ctx, Endpoint params, Endpoint indices) {
  return ctx.Op("GatherV2", {params, indices, IndexScalar(ctx, 0)});
}

Endpoint CastTo(GradientContext& ctx, Endpoint x, DType dtype) {
  AttrMap attrs;
  attrs.Set("DstT", dtype);
  return ctx.Op("Cast", {x}, attrs);
}

// Reshapes the vector v ([n]) to [n, 1, ..., 1] with the rank of `like`, to broadcast per row.
Endpoint AsColumn(GradientContext& ctx, Endpoint v, Endpoint like) {
  Endpoint rest = ctx.Op("Sub", {ctx.Op("Rank", {like}), IndexScalar(ctx, 1)});
  Endpoint ones = ctx.Op("Fill", {ctx.Op("Reshape", {rest, IndexConst(ctx, {1}, DType::kInt32)}),
                                  IndexScalar(ctx, 1)});
  return ctx.Op(
      "Reshape",
      {v, ctx.Op("ConcatV2", {IndexConst(ctx, {-1}, DType::kInt32), ones, IndexScalar(ctx, 0)})});
}

// The number of rows in each segment of sorted ids, as data's dtype.
Endpoint SegmentCounts(GradientContext& ctx, Endpoint ids) {
  return ctx.Op("SegmentSum", {ctx.Op("OnesLike", {CastTo(ctx, ids, ctx.input_type(0))}), ids});
}

Status SegmentSumGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, Gather(ctx, ctx.output_grad(0), ctx.input(1)));
  return Status::OK();
}

Status SegmentMeanGrad(GradientContext& ctx) {
  const Endpoint counts = AsColumn(ctx, SegmentCounts(ctx, ctx.input(1)), ctx.input(0));
  ctx.SetInputGrad(0, Gather(ctx, ctx.Op("RealDiv", {ctx.output_grad(0), counts}), ctx.input(1)));
  return Status::OK();
}

// The gradient of a segment maximum or minimum is shared equally by the rows that attain it.
// `gather` maps per-segment values to rows (dropping negative ids for the unsorted ops) and
// `segment_sum` sums per-row values into segments.
template <typename GatherFn, typename SumFn>
Status MinOrMaxGrad(GradientContext& ctx, GatherFn gather, SumFn segment_sum, Endpoint row_kept) {
  const Endpoint data = ctx.input(0);
  Endpoint is_selected = ctx.Op("Equal", {data, gather(ctx.output(0))});
  if (row_kept.node != nullptr) is_selected = ctx.Op("LogicalAnd", {is_selected, row_kept});
  const Endpoint num_selected = segment_sum(CastTo(ctx, is_selected, ctx.input_type(0)));
  const Endpoint gathered = gather(ctx.Op("RealDiv", {ctx.output_grad(0), num_selected}));
  ctx.SetInputGrad(0, ctx.Op("SelectV2", {is_selected, gathered, ctx.Op("ZerosLike", {gathered})}));
  return Status::OK();
}

// The gradient of a segment product: product / x for rows that are not zero; for a segment with
// one zero, the product of the others at the zero; zero for segments with two or more zeros.
template <typename GatherFn, typename SumFn, typename ProdFn>
Status ProdGrad(GradientContext& ctx, GatherFn gather, SumFn segment_sum, ProdFn segment_prod) {
  const Endpoint data = ctx.input(0);
  const Endpoint zero = ctx.ScalarLike(data, 0);
  const Endpoint is_zero = ctx.Op("Equal", {data, zero});
  const Endpoint num_zeros = segment_sum(CastTo(ctx, is_zero, DType::kInt32));
  Endpoint grad = ctx.output_grad(0);
  grad = ctx.Op("SelectV2", {ctx.Op("Greater", {num_zeros, IndexScalar(ctx, 1)}),
                             ctx.Op("ZerosLike", {grad}), grad});
  const Endpoint non_zero_data = ctx.Op("SelectV2", {is_zero, ctx.Op("OnesLike", {data}), data});
  const Endpoint gathered_prod = gather(ctx.output(0));
  const Endpoint gathered_non_zero_prod = gather(segment_prod(non_zero_data));
  const Endpoint partial = ctx.Op("SelectV2", {is_zero, gathered_non_zero_prod,
                                               ctx.Op("RealDiv", {gathered_prod, non_zero_data})});
  ctx.SetInputGrad(0, ctx.Op("Mul", {gather(grad), partial}));
  return Status::OK();
}

Status SegmentMinOrMaxGrad(GradientContext& ctx) {
  const Endpoint ids = ctx.input(1);
  return MinOrMaxGrad(
      ctx, [&](Endpoint v) { return Gather(ctx, v, ids); },
      [&](Endpoint v) { return ctx.Op("SegmentSum", {v, ids}); }, Endpoint{});
}

Status SegmentProdGrad(GradientContext& ctx) {
  const Endpoint ids = ctx.input(1);
  return ProdGrad(
      ctx, [&](Endpoint v) { return Gather(ctx, v, ids); },
      [&](Endpoint v) { return ctx.Op("SegmentSum", {v, ids}); },
      [&](Endpoint v) { return ctx.Op("SegmentProd", {v, ids}); });
}

// For the unsorted ops: per-segment values gathered to rows, zeros for rows with negative ids.
struct DropNegatives {
  GradientContext& ctx;
  Endpoint clipped_ids;  // max(ids, 0)
  Endpoint kept;         // ids >= 0, shaped to broadcast over the rows

  explicit DropNegatives(GradientContext& c) : ctx(c) {
    const Endpoint ids = ctx.input(1);
    const Endpoint zero = IndexScalar(ctx, 0, ctx.input_type(1));
    clipped_ids = ctx.Op("Maximum", {ids, zero});
    // ids >= 0 reshaped to ids.shape + [1] * (data.rank - ids.rank), then broadcast.
    Endpoint row_rank = ctx.Op("Sub", {ctx.Op("Rank", {ctx.input(0)}), ctx.Op("Rank", {ids})});
    Endpoint ones = ctx.Op(
        "Fill",
        {ctx.Op("Reshape", {row_rank, IndexConst(ctx, {1}, DType::kInt32)}), IndexScalar(ctx, 1)});
    Endpoint shape = ctx.Op("ConcatV2", {ctx.Shape(ids), ones, IndexScalar(ctx, 0)});
    kept = ctx.Op("Reshape", {ctx.Op("GreaterEqual", {ids, zero}), shape});
  }
  Endpoint operator()(Endpoint per_segment) {
    Endpoint gathered = Gather(ctx, per_segment, clipped_ids);
    return ctx.Op("SelectV2", {kept, gathered, ctx.Op("ZerosLike", {gathered})});
  }
};

Status UnsortedSegmentMinOrMaxGrad(GradientContext& ctx) {
  DropNegatives gather(ctx);
  const Endpoint ids = ctx.input(1);
  const Endpoint n = ctx.input(2);
  return MinOrMaxGrad(
      ctx, gather, [&](Endpoint v) { return ctx.Op("UnsortedSegmentSum", {v, ids, n}); },
      gather.kept);
}

Status UnsortedSegmentProdGrad(GradientContext& ctx) {
  DropNegatives gather(ctx);
  const Endpoint ids = ctx.input(1);
  const Endpoint n = ctx.input(2);
  return ProdGrad(
      ctx, gather, [&](Endpoint v) { return ctx.Op("UnsortedSegmentSum", {v, ids, n}); },
      [&](Endpoint v) { return ctx.Op("UnsortedSegmentProd", {v, ids, n}); });
}

// d data: each segment's gradient (scaled for mean and sqrt_n) summed into the data rows that
// indices chose.
template <Reduce R>
Status SparseSegmentGrad(GradientContext& ctx) {
  const Endpoint indices = ctx.input(1);
  const Endpoint ids = ctx.input(2);
  Endpoint grad = ctx.output_grad(0);
  if (R != Reduce::kSum) {
    Endpoint counts = SegmentCounts(ctx, ids);
    if (R == Reduce::kSqrtN) counts = ctx.Op("Sqrt", {counts});
    grad = ctx.Op("RealDiv", {grad, AsColumn(ctx, counts, ctx.input(0))});
  }
  const Endpoint rows =
      ctx.Op("GatherV2", {ctx.Shape(ctx.input(0)), IndexScalar(ctx, 0), IndexScalar(ctx, 0)});
  ctx.SetInputGrad(0, ctx.Op("UnsortedSegmentSum", {Gather(ctx, grad, ids), indices, rows}));
  return Status::OK();
}

// --- Registration ----------------------------------------------------------------------------

struct SegmentRow {
  const char* name;
  Kind kind;
  KernelFn kernel;
  const std::vector<DType>* types;
  GradFn gradient;
  const char* doc;
};

const SegmentRow kSegmentRows[] = {
    {"SegmentSum", Kind::kSorted, SegmentKernel<Reduce::kSum, Kind::kSorted>,
     &kNumericAndComplexTypes, SegmentSumGrad,
     "Sums of the rows of data in each segment (sorted segment ids)."},
    {"SegmentMean", Kind::kSorted, SegmentKernel<Reduce::kMean, Kind::kSorted>,
     &kNumericAndComplexTypes, SegmentMeanGrad,
     "Means of the rows of data in each segment (sorted segment ids)."},
    {"SegmentMax", Kind::kSorted, SegmentKernel<Reduce::kMax, Kind::kSorted>, &kNumericTypes,
     SegmentMinOrMaxGrad,
     "Maxima of the rows of data in each segment (sorted ids); empty segments give 0."},
    {"SegmentMin", Kind::kSorted, SegmentKernel<Reduce::kMin, Kind::kSorted>, &kNumericTypes,
     SegmentMinOrMaxGrad,
     "Minima of the rows of data in each segment (sorted ids); empty segments give 0."},
    {"SegmentProd", Kind::kSorted, SegmentKernel<Reduce::kProd, Kind::kSorted>, &kNumericTypes,
     SegmentProdGrad,
     "Products of the rows of data in each segment (sorted ids); empty segments give 1."},
    {"UnsortedSegmentMax", Kind::kUnsorted, SegmentKernel<Reduce::kMax, Kind::kUnsorted>,
     &kNumericTypes, UnsortedSegmentMinOrMaxGrad,
     "Maxima of the rows of data by segment id into num_segments rows; empty segments give "
     "the dtype's lowest value, negative ids drop their row."},
    {"UnsortedSegmentMin", Kind::kUnsorted, SegmentKernel<Reduce::kMin, Kind::kUnsorted>,
     &kNumericTypes, UnsortedSegmentMinOrMaxGrad,
     "Minima of the rows of data by segment id into num_segments rows; empty segments give "
     "the dtype's largest value, negative ids drop their row."},
    {"UnsortedSegmentProd", Kind::kUnsorted, SegmentKernel<Reduce::kProd, Kind::kUnsorted>,
     &kNumericTypes, UnsortedSegmentProdGrad,
     "Products of the rows of data by segment id into num_segments rows; empty segments give "
     "1, negative ids drop their row."},
    {"SparseSegmentSum", Kind::kSparse, SegmentKernel<Reduce::kSum, Kind::kSparse>, &kNumericTypes,
     SparseSegmentGrad<Reduce::kSum>,
     "Sums of the rows data[indices[k]] by sorted segment id segment_ids[k]."},
    {"SparseSegmentMean", Kind::kSparse, SegmentKernel<Reduce::kMean, Kind::kSparse>, &kFloatTypes,
     SparseSegmentGrad<Reduce::kMean>,
     "Means of the rows data[indices[k]] by sorted segment id segment_ids[k]."},
    {"SparseSegmentSqrtN", Kind::kSparse, SegmentKernel<Reduce::kSqrtN, Kind::kSparse>,
     &kFloatTypes, SparseSegmentGrad<Reduce::kSqrtN>,
     "Sums of the rows data[indices[k]] by sorted segment id, divided by the square root of "
     "each segment's size."},
};

OpBuilder SegmentOp(const SegmentRow& row) {
  OpBuilder builder(row.name);
  builder.Input("data", "T");
  switch (row.kind) {
    case Kind::kSorted:
      builder.Input("segment_ids", "Tindices")
          .TypeAttr("Tindices", kIndexTypes)
          .Shape(SortedSegmentShape);
      break;
    case Kind::kUnsorted:
      builder.Input("segment_ids", "Tindices")
          .Input("num_segments", "Tnumsegments")
          .TypeAttr("Tindices", kIndexTypes)
          .TypeAttr("Tnumsegments", kIndexTypes, DType::kInt32)
          .Shape(UnsortedSegmentShape);
      break;
    case Kind::kSparse:
      builder.Input("indices", "Tidx")
          .Input("segment_ids", "Tsegmentids")
          .TypeAttr("Tidx", kIndexTypes, DType::kInt32)
          .TypeAttr("Tsegmentids", kIndexTypes, DType::kInt32)
          .Attr("sparse_gradient", false)
          .Shape(SortedSegmentShape);
      break;
  }
  builder.Output("output", "T")
      .TypeAttr("T", *row.types)
      .Kernel("CPU", row.kernel)
      .Gradient(row.gradient)
      .Doc(row.doc);
  return builder;
}

const bool kSegmentOpsRegistered = [] {
  for (const SegmentRow& row : kSegmentRows) OpRegistrar registrar(SegmentOp(row));
  return true;
}();

}  // namespace
}  // namespace flowstone
