// Matrix products: MatMul (two matrices) and BatchMatMulV2 (stacks of matrices whose batch
// dimensions broadcast like numpy's). Both compute through Gemm (gemm.h), complex numbers through
// ComplexGemm.
#include <algorithm>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/fused_epilogue.h"
#include "ops/gemm.h"
#include "ops/matmul_util.h"

namespace flowstone {
namespace {

// ---------------------------------------------------------------------------------------------
// MatMul

Status MatMulShape(InferenceContext& ctx) {
  PartialShape a, b;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 2, &a));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 2, &b));
  MatrixDims op_a = Op(a.dim(0), a.dim(1), ctx.attrs().GetOr<bool>("transpose_a", false));
  MatrixDims op_b = Op(b.dim(0), b.dim(1), ctx.attrs().GetOr<bool>("transpose_b", false));
  int64_t inner;
  FS_RETURN_IF_ERROR(ctx.MergeDim(op_a.cols, op_b.rows, &inner));
  ctx.set_output(0, PartialShape({op_a.rows, op_b.cols}));
  return Status::OK();
}

class MatMulKernel final : public OpKernel {
 public:
  explicit MatMulKernel(const Node& node) : OpKernel(node) {}

  Status Init() override {
    transpose_a_ = node().attrs().GetOr<bool>("transpose_a", false);
    transpose_b_ = node().attrs().GetOr<bool>("transpose_b", false);
    fused_ = node().type() == "_FusedMatMul";
    if (fused_) {
      return FusedEpilogue::Parse(node().type(), node().attrs(), node().num_inputs() - 2, &tail_);
    }
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.rank() != 2 || b.rank() != 2) {
      return errors::InvalidArgument("MatMul multiplies matrices (rank 2), but got shapes ",
                                     a.shape().ToString(), " and ", b.shape().ToString(),
                                     "; use tf.matmul, which handles batches of matrices");
    }
    MatrixDims op_a = Op(a.dim(0), a.dim(1), transpose_a_);
    MatrixDims op_b = Op(b.dim(0), b.dim(1), transpose_b_);
    if (op_a.cols != op_b.rows) {
      return errors::InvalidArgument(
          "Matrix size-incompatible: In[0]: ", a.shape().ToString(),
          ", In[1]: ", b.shape().ToString(), " (transpose_a=", transpose_a_,
          ", transpose_b=", transpose_b_,
          "): the columns of the first operand must equal the rows of the second");
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{op_a.rows, op_b.cols}, &out));
    if (fused_) {
      return DispatchDType<float, double>(a.dtype(), "_FusedMatMul", [&]<typename T>() -> Status {
        std::vector<T> gain, shift;
        FS_RETURN_IF_ERROR(tail_.Coefficients(node().type(), ctx, 2, op_b.cols, &gain, &shift));
        FS_RETURN_IF_ERROR(Gemm<T>(ctx, transpose_a_, transpose_b_, op_a.rows, op_b.cols, op_a.cols,
                                   a.data<T>(), a.dim(1), b.data<T>(), b.dim(1), out->data<T>(),
                                   op_b.cols));
        // The bias and activation over rows of the product, which is still in cache for the
        // layer sizes that fused MatMuls usually have.
        T* c = out->data<T>();
        const int64_t cols = op_b.cols;
        ctx.ParallelFor(op_a.rows, tail_.cost_per_element() * cols,
                        [&](int64_t begin, int64_t end) {
                          tail_.Apply(c + begin * cols, end - begin, cols, 1, gain, shift);
                        });
        return Status::OK();
      });
    }
    return DispatchDType<float, double, int32_t, int64_t, complex64, complex128>(
        a.dtype(), "MatMul", [&]<typename T>() -> Status {
          if constexpr (kIsComplex<T>) {
            // MatMul's transpose does not conjugate (tf.matmul's adjoint_a conjugates first).
            auto op = [](bool t) { return t ? MatrixOp::kTranspose : MatrixOp::kNone; };
            return ComplexGemm<T>(op(transpose_a_), op(transpose_b_), op_a.rows, op_b.cols,
                                  op_a.cols, a.data<T>(), a.dim(1), b.data<T>(), b.dim(1),
                                  out->data<T>(), op_b.cols);
          } else {
            return Gemm<T>(ctx, transpose_a_, transpose_b_, op_a.rows, op_b.cols, op_a.cols,
                           a.data<T>(), a.dim(1), b.data<T>(), b.dim(1), out->data<T>(), op_b.cols);
          }
        });
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
  // _FusedMatMul: the product, then `tail_`.
  bool fused_ = false;
  FusedEpilogue tail_;
};

// With C = op(A) op(B) and G = dC: dA = G op(B)^T and dB = op(A)^T G, each written as one product
// of the stored operands a and b so that no transpose is materialized (TensorFlow's four cases).
// `product(x, y, adj_x, adj_y)` adds the op computing op(x) op(y).
template <typename Product>
void MatrixProductGrads(GradientContext& ctx, Endpoint a, Endpoint b, bool t_a, bool t_b,
                        const Product& product) {
  const Endpoint g = ctx.output_grad(0);
  if (!t_a && !t_b) {
    ctx.SetInputGrad(0, product(g, b, false, true));
    ctx.SetInputGrad(1, product(a, g, true, false));
  } else if (!t_a && t_b) {
    ctx.SetInputGrad(0, product(g, b, false, false));
    ctx.SetInputGrad(1, product(g, a, true, false));
  } else if (t_a && !t_b) {
    ctx.SetInputGrad(0, product(b, g, false, true));
    ctx.SetInputGrad(1, product(a, g, false, false));
  } else {
    ctx.SetInputGrad(0, product(b, g, true, true));
    ctx.SetInputGrad(1, product(g, a, true, true));
  }
}

// MatMul's transposes do not conjugate, so complex operands enter the gradient conjugated (as in
// TensorFlow); BatchMatMulV2's adjoints already conjugate.
Status MatMulGrad(GradientContext& ctx) {
  MatrixProductGrads(ctx, ctx.ConjIfComplex(ctx.input(0)), ctx.ConjIfComplex(ctx.input(1)),
                     ctx.attrs().GetOr<bool>("transpose_a", false),
                     ctx.attrs().GetOr<bool>("transpose_b", false),
                     [&](Endpoint x, Endpoint y, bool t_x, bool t_y) {
                       AttrMap attrs;
                       attrs.Set("transpose_a", t_x);
                       attrs.Set("transpose_b", t_y);
                       return ctx.Op("MatMul", {x, y}, attrs);
                     });
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("MatMul")
                   .Input("a", "T")
                   .Input("b", "T")
                   .Output("product", "T")
                   .TypeAttr("T", kRealAndComplexTypes)
                   .Attr("transpose_a", false)
                   .Attr("transpose_b", false)
                   .Shape(MatMulShape)
                   .KernelClass<MatMulKernel>("CPU")
                   .Gradient(MatMulGrad)
                   .Doc("The matrix product op(a) * op(b), op transposing when asked."));

// TensorFlow's _FusedMatMul, with its signature (the remapper writes it into exported graphs;
// Flowstone's plan optimizer creates it from MatMul + BiasAdd + activation).
FS_REGISTER_OP(OpBuilder("_FusedMatMul")
                   .Input("a", "T")
                   .Input("b", "T")
                   .InputList("args", "T", "num_args")
                   .Output("product", "T")
                   .TypeAttr("T", {DType::kFloat32, DType::kFloat64})
                   .Attr("transpose_a", false)
                   .Attr("transpose_b", false)
                   .Attr("fused_ops", AttrValue(std::vector<std::string>{}))
                   .Attr("epsilon", 0.0001f)
                   .Attr("leakyrelu_alpha", 0.2f)
                   .Shape(MatMulShape)
                   .KernelClass<MatMulKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("MatMul followed by the fused_ops (BiasAdd and an activation) in one "
                        "kernel. Created by graph optimizers after gradients are built, so it has "
                        "no gradient of its own."));

// ---------------------------------------------------------------------------------------------
// BatchMatMulV2

// Splits a shape of rank >= 2 into its batch dimensions and its matrix dimensions.
PartialShape BatchPart(const PartialShape& s) {
  std::vector<int64_t> dims = s.ToVector();
  dims.resize(dims.size() - 2);
  return PartialShape(dims);
}

Status BatchMatMulShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(0, 2));
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(1, 2));
  const PartialShape& x = ctx.input(0);
  const PartialShape& y = ctx.input(1);
  if (!x.known_rank() || !y.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  int rx = x.rank(), ry = y.rank();
  MatrixDims op_x = Op(x.dim(rx - 2), x.dim(rx - 1), ctx.attrs().GetOr<bool>("adj_x", false));
  MatrixDims op_y = Op(y.dim(ry - 2), y.dim(ry - 1), ctx.attrs().GetOr<bool>("adj_y", false));
  int64_t inner;
  FS_RETURN_IF_ERROR(ctx.MergeDim(op_x.cols, op_y.rows, &inner));
  PartialShape batch;
  FS_RETURN_IF_ERROR(BroadcastShapes(BatchPart(x), BatchPart(y), &batch));
  std::vector<int64_t> dims = batch.ToVector();
  dims.push_back(op_x.rows);
  dims.push_back(op_y.cols);
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// Up to this many multiply-adds per matrix, batches run in parallel, each product on one thread;
// larger products run one after another, each split into tiles by Gemm. Gemm cuts a product into
// tiles of at least 2^20 multiply-adds, so an attention head's 128 x 128 x 64 product is one tile:
// when this bound was 64^3, a transformer's BatchMatMulV2 ran its batches one after another on
// one core (at batch 32, 128 products per node). Per-batch results do not depend on the split.
constexpr int64_t kSmallMatrixWork = int64_t{1} << 23;

class BatchMatMulKernel final : public OpKernel {
 public:
  explicit BatchMatMulKernel(const Node& node) : OpKernel(node) {}

  Status Init() override {
    adj_x_ = node().attrs().GetOr<bool>("adj_x", false);
    adj_y_ = node().attrs().GetOr<bool>("adj_y", false);
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    BatchMatMulPlan matmul;
    FS_RETURN_IF_ERROR(PlanBatchMatMul(x.shape(), y.shape(), adj_x_, adj_y_, &matmul));
    const BatchPlan& plan = matmul.batches;
    const int rx = x.rank(), ry = y.rank();
    const int64_t m = matmul.m, n = matmul.n, k = matmul.k;
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, matmul.out_shape, &out));
    const int64_t batches = static_cast<int64_t>(plan.x_index.size());
    if (out->num_elements() == 0) return Status::OK();
    const int64_t x_size = x.dim(rx - 2) * x.dim(rx - 1);
    const int64_t y_size = y.dim(ry - 2) * y.dim(ry - 1);
    return DispatchDType<float, double, int32_t, int64_t, complex64, complex128>(
        x.dtype(), "BatchMatMulV2", [&]<typename T>() -> Status {
          auto one = [&](int64_t b) {
            const T* xb = x.data<T>() + plan.x_index[b] * x_size;
            const T* yb = y.data<T>() + plan.y_index[b] * y_size;
            T* ob = out->data<T>() + b * m * n;
            if constexpr (kIsComplex<T>) {
              auto op = [](bool adj) { return adj ? MatrixOp::kAdjoint : MatrixOp::kNone; };
              return ComplexGemm<T>(op(adj_x_), op(adj_y_), m, n, k, xb, x.dim(rx - 1), yb,
                                    y.dim(ry - 1), ob, n);
            } else {
              return Gemm<T>(ctx, adj_x_, adj_y_, m, n, k, xb, x.dim(rx - 1), yb, y.dim(ry - 1), ob,
                             n);
            }
          };
          if (batches == 1 || m * n * k > kSmallMatrixWork) {
            for (int64_t b = 0; b < batches; ++b) FS_RETURN_IF_ERROR(one(b));
            return Status::OK();
          }
          // Small products: one batch per task; a product split again from a worker thread runs
          // inline there.
          std::vector<Status> status(batches);
          ctx.ParallelFor(batches, 2 * m * n * k + m * n, [&](int64_t begin, int64_t end) {
            for (int64_t b = begin; b < end; ++b) status[b] = one(b);
          });
          for (const Status& s : status) FS_RETURN_IF_ERROR(s);
          return Status::OK();
        });
  }

 private:
  bool adj_x_ = false;
  bool adj_y_ = false;
};

// The batch dimensions of a shape vector: all but the last two entries.
Endpoint BatchDims(GradientContext& ctx, Endpoint shape) {
  auto vector = [&](int32_t v) {
    return ctx.Const(Tensor::FromVector(std::vector<int32_t>{v}, TensorShape{1}));
  };
  return ctx.Op("StridedSlice", {shape, vector(0), vector(-2), vector(1)});
}

// True when the batch dimensions of x and y are known and equal: no operand was broadcast.
bool SameStaticBatch(const PartialShape& x, const PartialShape& y) {
  return x.IsFullyDefined() && y.IsFullyDefined() && x.rank() == y.rank() &&
         BatchPart(x) == BatchPart(y);
}

Status BatchMatMulGrad(GradientContext& ctx) {
  MatrixProductGrads(ctx, ctx.input(0), ctx.input(1), ctx.attrs().GetOr<bool>("adj_x", false),
                     ctx.attrs().GetOr<bool>("adj_y", false),
                     [&](Endpoint x, Endpoint y, bool adj_x, bool adj_y) {
                       AttrMap attrs;
                       attrs.Set("adj_x", adj_x);
                       attrs.Set("adj_y", adj_y);
                       return ctx.Op("BatchMatMulV2", {x, y}, attrs);
                     });
  if (!ctx.status().ok()) return Status::OK();
  // Each product above has the broadcast batch shape; an operand that was broadcast along some
  // batch dimensions gets its gradient summed over them.
  const Endpoint x = ctx.input(0), y = ctx.input(1);
  const PartialShape& x_shape = x.node->output_shape(x.index);
  const PartialShape& y_shape = y.node->output_shape(y.index);
  if (SameStaticBatch(x_shape, y_shape)) return Status::OK();
  Endpoint x_dims = ctx.Shape(x), y_dims = ctx.Shape(y);
  Node* axes =
      ctx.AddNode("BroadcastGradientArgs", {BatchDims(ctx, x_dims), BatchDims(ctx, y_dims)});
  if (axes == nullptr) return Status::OK();
  const Endpoint dims[2] = {x_dims, y_dims};
  for (int i = 0; i < 2; ++i) {
    Endpoint grad = ctx.input_grads()[i];
    const PartialShape& shape = i == 0 ? x_shape : y_shape;
    if (shape.IsFullyDefined() && shape == grad.node->output_shape(grad.index)) continue;
    Endpoint summed = ctx.Op("Sum", {grad, Endpoint{axes, i}});
    ctx.SetInputGrad(i, ctx.Op("Reshape", {summed, dims[i]}));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("BatchMatMulV2")
                   .Input("x", "T")
                   .Input("y", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kRealAndComplexTypes)
                   .Attr("adj_x", false)
                   .Attr("adj_y", false)
                   .Shape(BatchMatMulShape)
                   .KernelClass<BatchMatMulKernel>("CPU")
                   .Gradient(BatchMatMulGrad)
                   .Doc("Batched matrix products; batch dimensions broadcast."));

}  // namespace
}  // namespace flowstone
