// Fourier transforms over the innermost 1, 2 or 3 dimensions: FFT/IFFT (complex to complex),
// RFFT (real to the non-negative frequencies) and IRFFT (back to real, assuming Hermitian
// symmetry), as TensorFlow defines them: forward transforms are unnormalized, inverse ones divide
// by the number of points, and fft_length crops or zero-pads each transformed dimension.
//
// The one-dimensional transforms come from KISS FFT's C++ header (Debian's libkissfft-dev, see
// the Makefile): a templated mixed-radix FFT for float and double, BSD-licensed, and the same
// algorithm TensorFlow's CPU kernels use through Eigen. A d-dimensional transform is d passes of
// one-dimensional transforms along each axis.
#include <algorithm>
#include <complex>
#include <cstring>
#include <kissfft/kissfft.hh>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// Rough cycles per point of a one-dimensional transform of n points, per log2(n).
constexpr int64_t kFftCostPerPoint = 20;

// Transforms every line along `axis` of the row-major array `data` of shape `dims` in place:
// lines are gathered into a buffer, transformed and scattered back, on the intra-op threads.
// Inverse transforms divide by the line's length.
template <typename R>
void TransformAxis(const KernelContext& ctx, std::complex<R>* data,
                   const std::vector<int64_t>& dims, int axis, bool inverse) {
  const int64_t n = dims[axis];
  if (n <= 1) return;  // a one-point transform is the identity, with or without the 1/n
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  if (outer * inner == 0) return;
  const R scale = inverse ? R(1) / static_cast<R>(n) : R(1);
  int64_t log_n = 1;
  while ((int64_t{1} << log_n) < n) ++log_n;
  ctx.ParallelFor(outer * inner, n * log_n * kFftCostPerPoint, [&](int64_t begin, int64_t end) {
    // One plan per thread: KISS FFT's butterfly for prime factors above 5 writes scratch memory
    // inside the plan.
    const kissfft<R> fft(static_cast<size_t>(n), inverse);
    std::vector<std::complex<R>> in(n), out(n);
    for (int64_t line = begin; line < end; ++line) {
      std::complex<R>* base = data + (line / inner) * n * inner + line % inner;
      for (int64_t j = 0; j < n; ++j) in[j] = base[j * inner];
      fft.transform(in.data(), out.data());
      for (int64_t j = 0; j < n; ++j) base[j * inner] = out[j] * scale;
    }
  });
}

// Copies the overlap of src (shape src_dims) into dst (shape dst_dims, same rank, already
// zeroed), converting each element: the crop-or-pad of every transformed dimension.
template <typename S, typename D>
void CopyOverlap(const S* src, const std::vector<int64_t>& src_dims, D* dst,
                 const std::vector<int64_t>& dst_dims) {
  const int rank = static_cast<int>(src_dims.size());
  std::vector<int64_t> extent(rank);
  for (int i = 0; i < rank; ++i) extent[i] = std::min(src_dims[i], dst_dims[i]);
  for (int64_t e : extent) {
    if (e == 0) return;
  }
  std::vector<int64_t> index(rank, 0);  // odometer over all but the last dimension
  for (;;) {
    int64_t s = 0, d = 0;
    for (int i = 0; i < rank; ++i) {
      s = s * src_dims[i] + index[i];
      d = d * dst_dims[i] + index[i];
    }
    for (int64_t j = 0; j < extent[rank - 1]; ++j) dst[d + j] = D(src[s + j]);
    int i = rank - 2;
    for (; i >= 0; --i) {
      if (++index[i] < extent[i]) break;
      index[i] = 0;
    }
    if (i < 0) return;
  }
}

// The shape [batch, n_1, ..., n_rank] of a tensor whose innermost `rank` dimensions transform.
std::vector<int64_t> BatchAndInner(const TensorShape& shape, int rank) {
  int64_t batch = 1;
  for (int i = 0; i < shape.rank() - rank; ++i) batch *= shape.dim(i);
  std::vector<int64_t> dims = {batch};
  for (int i = shape.rank() - rank; i < shape.rank(); ++i) dims.push_back(shape.dim(i));
  return dims;
}

// RFFT and IRFFT pair float32 with complex64 and float64 with complex128 (TypeError otherwise,
// while the graph is built).
Status CheckPrecisions(const AttrMap& attrs, const std::string& op) {
  DType real = DType::kFloat32, complex = DType::kComplex64;
  FS_RETURN_IF_ERROR(attrs.Get("Treal", &real));
  FS_RETURN_IF_ERROR(attrs.Get("Tcomplex", &complex));
  if (RealPartType(complex) == real) return Status::OK();
  return errors::TypeError(op, ": Treal ", DTypeName(real), " does not match Tcomplex ",
                           DTypeName(complex),
                           "; use float32 with complex64 or float64 with "
                           "complex128");
}

// Reads fft_length (input 1): `rank` non-negative lengths.
Status ReadFftLength(const KernelContext& ctx, int rank, std::vector<int64_t>* lengths) {
  const Tensor& t = ctx.input(1);
  if (t.rank() != 1 || t.dim(0) != rank) {
    return errors::InvalidArgument(ctx.node().type(), " needs fft_length of shape [", rank,
                                   "], got shape ", t.shape().ToString());
  }
  lengths->clear();
  for (int i = 0; i < rank; ++i) {
    const int64_t v = t.ElementAsInt64(i);
    if (v < 0) {
      return errors::InvalidArgument(ctx.node().type(), ": fft_length must be >= 0, got ", v,
                                     " at index ", i);
    }
    lengths->push_back(v);
  }
  return Status::OK();
}

Status CheckRank(const KernelContext& ctx, int rank) {
  if (ctx.input(0).rank() < rank) {
    return errors::InvalidArgument(ctx.node().type(), " transforms the innermost ", rank,
                                   " dimension(s), so its input needs rank >= ", rank,
                                   ", got shape ", ctx.input(0).shape().ToString());
  }
  return Status::OK();
}

// FFT, IFFT and their 2-D and 3-D forms: complex to complex, the output in the input's shape.
template <int kRank, bool kInverse>
Status ComplexFftKernel(KernelContext& ctx) {
  FS_RETURN_IF_ERROR(CheckRank(ctx, kRank));
  const Tensor& in = ctx.input(0);
  return DispatchDType<complex64, complex128>(
      in.dtype(), ctx.node().type().c_str(), [&]<typename C>() -> Status {
        Tensor* out;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
        if (in.num_elements() > 0) {
          std::memcpy(out->raw_data(), in.raw_data(), in.bytes());
        }
        const std::vector<int64_t> dims = BatchAndInner(in.shape(), kRank);
        for (int axis = 1; axis <= kRank; ++axis) {
          TransformAxis(ctx, out->data<C>(), dims, axis, kInverse);
        }
        return ctx.CheckCancelled();
      });
}

// RFFT: the real input cropped or zero-padded to fft_length, transformed, and the last
// dimension cut to its fft_length[-1] / 2 + 1 non-negative frequencies.
template <int kRank>
Status RealFftKernel(KernelContext& ctx) {
  FS_RETURN_IF_ERROR(CheckRank(ctx, kRank));
  FS_RETURN_IF_ERROR(CheckPrecisions(ctx.attrs(), ctx.node().type()));
  std::vector<int64_t> lengths;
  FS_RETURN_IF_ERROR(ReadFftLength(ctx, kRank, &lengths));
  const Tensor& in = ctx.input(0);
  return DispatchDType<float, double>(
      in.dtype(), ctx.node().type().c_str(), [&]<typename R>() -> Status {
        using C = std::complex<R>;
        const std::vector<int64_t> in_dims = BatchAndInner(in.shape(), kRank);
        std::vector<int64_t> full_dims = {in_dims[0]};
        full_dims.insert(full_dims.end(), lengths.begin(), lengths.end());
        std::vector<int64_t> out_dims = full_dims;
        out_dims.back() = lengths.back() / 2 + 1;
        Dims out_shape;
        for (int i = 0; i < in.rank() - kRank; ++i) out_shape.push_back(in.dim(i));
        for (int i = 1; i <= kRank; ++i) out_shape.push_back(out_dims[i]);
        Tensor* out;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(out_shape), &out));
        int64_t full_size = 1;
        for (int64_t d : full_dims) full_size *= d;
        std::vector<C> full(static_cast<size_t>(full_size));
        CopyOverlap(in.data<R>(), in_dims, full.data(), full_dims);
        for (int axis = 1; axis <= kRank; ++axis) {
          TransformAxis(ctx, full.data(), full_dims, axis, /*inverse=*/false);
        }
        std::fill(out->data<C>(), out->data<C>() + out->num_elements(), C(0));
        CopyOverlap(full.data(), full_dims, out->data<C>(), out_dims);
        return ctx.CheckCancelled();
      });
}

// IRFFT: the input's inner dimensions cropped or zero-padded to fft_length (the last one to
// fft_length[-1] / 2 + 1), inverse-transformed along all but the last dimension, completed along
// the last one by Hermitian symmetry (X[n - k] = conj(X[k])), and inverse-transformed to its real
// part. This is TensorFlow's order, so the imaginary parts that symmetry ignores are ignored alike.
template <int kRank>
Status InverseRealFftKernel(KernelContext& ctx) {
  FS_RETURN_IF_ERROR(CheckRank(ctx, kRank));
  FS_RETURN_IF_ERROR(CheckPrecisions(ctx.attrs(), ctx.node().type()));
  std::vector<int64_t> lengths;
  FS_RETURN_IF_ERROR(ReadFftLength(ctx, kRank, &lengths));
  const Tensor& in = ctx.input(0);
  return DispatchDType<complex64, complex128>(
      in.dtype(), ctx.node().type().c_str(), [&]<typename C>() -> Status {
        using R = typename C::value_type;
        const std::vector<int64_t> in_dims = BatchAndInner(in.shape(), kRank);
        std::vector<int64_t> full_dims = {in_dims[0]};
        full_dims.insert(full_dims.end(), lengths.begin(), lengths.end());
        const int64_t n = lengths.back();
        const int64_t half = n / 2 + 1;
        std::vector<int64_t> half_dims = full_dims;
        half_dims.back() = half;
        Dims out_shape;
        for (int i = 0; i < in.rank() - kRank; ++i) out_shape.push_back(in.dim(i));
        for (int64_t d : lengths) out_shape.push_back(d);
        Tensor* out;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(out_shape), &out));
        if (out->num_elements() == 0) return Status::OK();
        // The half spectrum, then its inverse along all but the last dimension.
        int64_t half_size = 1;
        for (int64_t d : half_dims) half_size *= d;
        std::vector<C> spectrum(static_cast<size_t>(half_size));
        CopyOverlap(in.data<C>(), in_dims, spectrum.data(), half_dims);
        for (int axis = 1; axis < kRank; ++axis) {
          TransformAxis(ctx, spectrum.data(), half_dims, axis, /*inverse=*/true);
        }
        // Each line of the last dimension: completed, inverse-transformed, real part kept.
        const int64_t lines = half_size / half;
        const R scale = R(1) / static_cast<R>(n);
        R* dst = out->data<R>();
        ctx.ParallelFor(lines, n * kFftCostPerPoint * 8, [&](int64_t begin, int64_t end) {
          const kissfft<R> fft(static_cast<size_t>(n), /*inverse=*/true);  // one per thread
          std::vector<C> line(n), result(n);
          for (int64_t l = begin; l < end; ++l) {
            const C* src = spectrum.data() + l * half;
            for (int64_t k = 0; k < half && k < n; ++k) line[k] = src[k];
            for (int64_t k = half; k < n; ++k) line[k] = std::conj(src[n - k]);
            if (n == 1) {  // the one-point transform is the identity
              result[0] = line[0];
            } else {
              fft.transform(line.data(), result.data());
            }
            for (int64_t j = 0; j < n; ++j) dst[l * n + j] = result[j].real() * scale;
          }
        });
        return ctx.CheckCancelled();
      });
}

// ----------------------------------------------------------------------------------------------
// Shapes

template <int kRank>
Status ComplexFftShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(0, kRank));
  return shape_fns::Unchanged(ctx);
}

// The input's batch dimensions followed by the transformed ones: fft_length, with the last one
// halved (plus one) for RFFT; unknown where fft_length is not known while building.
template <int kRank, bool kHalfLast>
Status RealFftShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(CheckPrecisions(ctx.attrs(), ctx.op_type()));
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(0, kRank));
  PartialShape lengths_shape;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &lengths_shape));
  if (lengths_shape.dim(0) >= 0 && lengths_shape.dim(0) != kRank) {
    return errors::InvalidArgument(ctx.op_type(), " '", ctx.node_name(),
                                   "' needs fft_length of shape [", kRank, "], got shape ",
                                   lengths_shape.ToString());
  }
  const PartialShape& in = ctx.input(0);
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank() - kRank; ++i) dims.push_back(in.dim(i));
  const Tensor* lengths = ctx.input_value(1);
  for (int i = 0; i < kRank; ++i) {
    int64_t d = lengths == nullptr ? PartialShape::kUnknownDim : lengths->ElementAsInt64(i);
    if (d < PartialShape::kUnknownDim) {
      return errors::InvalidArgument(ctx.op_type(), " '", ctx.node_name(),
                                     "': fft_length must be >= 0, got ", d);
    }
    if (kHalfLast && i == kRank - 1 && d >= 0) d = d / 2 + 1;
    dims.push_back(d);
  }
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// ----------------------------------------------------------------------------------------------
// Gradients (TensorFlow's): the adjoint of each transform.

// The product of the innermost `rank` dimensions of x, as a scalar of `dtype`: a constant when
// they are known while building, else computed at run time.
Endpoint InnerSize(GradientContext& ctx, Endpoint x, int rank, DType dtype) {
  const PartialShape& shape = x.node->output_shape(x.index);
  AttrMap cast;
  cast.Set("DstT", dtype);
  if (shape.known_rank() && shape.rank() >= rank) {
    int64_t size = 1;
    bool known = true;
    for (int i = shape.rank() - rank; i < shape.rank(); ++i) {
      known = known && shape.dim(i) >= 0;
      size *= std::max<int64_t>(shape.dim(i), 0);
    }
    if (known) {
      return ctx.Op("Cast", {ctx.Const(Tensor::Scalar<int64_t>(size))}, cast);
    }
  }
  AttrMap slice;
  slice.Set("end_mask", 1);
  const Endpoint inner =
      ctx.Op("StridedSlice",
             {ctx.Shape(x), ctx.Const(Tensor::FromVector<int32_t>({-rank}, TensorShape{1})),
              ctx.Const(Tensor::FromVector<int32_t>({0}, TensorShape{1})),
              ctx.Const(Tensor::FromVector<int32_t>({1}, TensorShape{1}))},
             slice);
  return ctx.Op("Cast", {ctx.Op("Prod", {inner, ctx.Const(Tensor::Scalar<int32_t>(0))})}, cast);
}

// FFT: x = IFFT(g) * n. IFFT: x = FFT(g) / n (n: the points transformed).
template <int kRank, bool kInverse>
Status ComplexFftGrad(GradientContext& ctx) {
  static const char* kForward[] = {"", "FFT", "FFT2D", "FFT3D"};
  static const char* kBackward[] = {"", "IFFT", "IFFT2D", "IFFT3D"};
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint size = InnerSize(ctx, grad, kRank, ctx.input_type(0));
  if (kInverse) {
    ctx.SetInputGrad(0, ctx.Op("RealDiv", {ctx.Op(kForward[kRank], {grad}), size}));
  } else {
    ctx.SetInputGrad(0, ctx.Op("Mul", {ctx.Op(kBackward[kRank], {grad}), size}));
  }
  return Status::OK();
}

// Weights along the last dimension of a half spectrum `half` (fft_length[-1] / 2 + 1 entries,
// for fft_length `lengths`): `edge` at frequency 0 and, for an even length, at the Nyquist
// frequency (the entries Hermitian symmetry does not duplicate), `inner` elsewhere; in half's
// complex dtype.
Endpoint HermitianWeights(GradientContext& ctx, Endpoint half, Endpoint lengths, double edge,
                          double inner) {
  AttrMap last;
  last.Set("end_mask", 1);
  last.Set("shrink_axis_mask", 1);
  auto vector = [&](int32_t v) {
    return ctx.Const(Tensor::FromVector<int32_t>({v}, TensorShape{1}));
  };
  const Endpoint n = ctx.Op("StridedSlice", {lengths, vector(-1), vector(0), vector(1)}, last);
  const Endpoint count =
      ctx.Op("StridedSlice", {ctx.Shape(half), vector(-1), vector(0), vector(1)}, last);
  const Endpoint zero = ctx.Const(Tensor::Scalar<int32_t>(0));
  const Endpoint index = ctx.Op("Range", {zero, count, ctx.Const(Tensor::Scalar<int32_t>(1))});
  const Endpoint twice = ctx.Op("Mul", {index, ctx.Const(Tensor::Scalar<int32_t>(2))});
  const Endpoint is_edge =
      ctx.Op("LogicalOr", {ctx.Op("Equal", {index, zero}), ctx.Op("Equal", {twice, n})});
  const DType dtype = half.node->output_type(half.index);
  const Endpoint weights = ctx.Op("SelectV2", {is_edge, ctx.Const(Tensor::Scalar<double>(edge)),
                                               ctx.Const(Tensor::Scalar<double>(inner))});
  AttrMap cast;
  cast.Set("DstT", dtype);
  return ctx.Op("Cast", {weights}, cast);
}

// The product of fft_length, as a scalar of `dtype`.
Endpoint LengthProduct(GradientContext& ctx, Endpoint lengths, DType dtype) {
  AttrMap cast;
  cast.Set("DstT", dtype);
  return ctx.Op("Cast", {ctx.Op("Prod", {lengths, ctx.Const(Tensor::Scalar<int32_t>(0))})}, cast);
}

// RFFT keeps the frequencies [0, n/2] of a real signal x: dL/dx = Re(sum_k g_k e^{2 pi i k x / n})
// over those frequencies only, which is n * IRFFT(g * w) with w = 1 at the frequencies symmetry
// does not duplicate and 1/2 elsewhere (IRFFT counts the others twice). fft_length gets none.
template <int kRank>
Status RealFftGrad(GradientContext& ctx) {
  static const char* kInverseOp[] = {"", "IRFFT", "IRFFT2D", "IRFFT3D"};
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint lengths = ctx.input(1);
  const Endpoint weighted = ctx.Op("Mul", {grad, HermitianWeights(ctx, grad, lengths, 1.0, 0.5)});
  AttrMap attrs;
  attrs.Set("Treal", ctx.input_type(0));
  attrs.Set("Tcomplex", ctx.node().output_type(0));
  const Endpoint inverse = ctx.Op(kInverseOp[kRank], {weighted, lengths}, attrs);
  ctx.SetInputGrad(0, ctx.Op("Mul", {inverse, LengthProduct(ctx, lengths, ctx.input_type(0))}));
  return Status::OK();
}

// IRFFT: dL/dX = RFFT(g) / n, doubled at the frequencies that Hermitian symmetry counts twice.
template <int kRank>
Status InverseRealFftGrad(GradientContext& ctx) {
  static const char* kForwardOp[] = {"", "RFFT", "RFFT2D", "RFFT3D"};
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint lengths = ctx.input(1);
  AttrMap attrs;
  attrs.Set("Treal", ctx.node().output_type(0));
  attrs.Set("Tcomplex", ctx.input_type(0));
  const Endpoint forward = ctx.Op(kForwardOp[kRank], {grad, lengths}, attrs);
  const Endpoint weights = HermitianWeights(ctx, forward, lengths, 1.0, 2.0);
  const Endpoint scaled = ctx.Op("RealDiv", {ctx.Op("Mul", {forward, weights}),
                                             LengthProduct(ctx, lengths, ctx.input_type(0))});
  ctx.SetInputGrad(0, scaled);
  return Status::OK();
}

// ----------------------------------------------------------------------------------------------
// Registrations: one row per transform.

struct ComplexFftRow {
  const char* name;
  KernelFn kernel;
  ShapeFn shape;
  GradFn grad;
  const char* doc;
};

const ComplexFftRow kComplexFftRows[] = {
    {"FFT", ComplexFftKernel<1, false>, ComplexFftShape<1>, ComplexFftGrad<1, false>,
     "The discrete Fourier transform over the innermost dimension (unnormalized)."},
    {"IFFT", ComplexFftKernel<1, true>, ComplexFftShape<1>, ComplexFftGrad<1, true>,
     "The inverse discrete Fourier transform over the innermost dimension (divided by n)."},
    {"FFT2D", ComplexFftKernel<2, false>, ComplexFftShape<2>, ComplexFftGrad<2, false>,
     "The 2-D discrete Fourier transform over the innermost 2 dimensions."},
    {"IFFT2D", ComplexFftKernel<2, true>, ComplexFftShape<2>, ComplexFftGrad<2, true>,
     "The inverse 2-D discrete Fourier transform over the innermost 2 dimensions."},
    {"FFT3D", ComplexFftKernel<3, false>, ComplexFftShape<3>, ComplexFftGrad<3, false>,
     "The 3-D discrete Fourier transform over the innermost 3 dimensions."},
    {"IFFT3D", ComplexFftKernel<3, true>, ComplexFftShape<3>, ComplexFftGrad<3, true>,
     "The inverse 3-D discrete Fourier transform over the innermost 3 dimensions."},
};

struct RealFftRow {
  const char* name;
  bool to_complex;  // RFFT (real in, complex out) or IRFFT (complex in, real out)
  KernelFn kernel;
  ShapeFn shape;
  GradFn grad;
  const char* doc;
};

const RealFftRow kRealFftRows[] = {
    {"RFFT", true, RealFftKernel<1>, RealFftShape<1, true>, RealFftGrad<1>,
     "The Fourier transform of a real signal over the innermost dimension: its fft_length / 2 + "
     "1 non-negative frequencies."},
    {"IRFFT", false, InverseRealFftKernel<1>, RealFftShape<1, false>, InverseRealFftGrad<1>,
     "The real signal of fft_length points whose RFFT is the input (Hermitian symmetry "
     "assumed)."},
    {"RFFT2D", true, RealFftKernel<2>, RealFftShape<2, true>, RealFftGrad<2>,
     "RFFT over the innermost 2 dimensions."},
    {"IRFFT2D", false, InverseRealFftKernel<2>, RealFftShape<2, false>, InverseRealFftGrad<2>,
     "IRFFT over the innermost 2 dimensions."},
    {"RFFT3D", true, RealFftKernel<3>, RealFftShape<3, true>, RealFftGrad<3>,
     "RFFT over the innermost 3 dimensions."},
    {"IRFFT3D", false, InverseRealFftKernel<3>, RealFftShape<3, false>, InverseRealFftGrad<3>,
     "IRFFT over the innermost 3 dimensions."},
};

const bool kRegistered = [] {
  for (const ComplexFftRow& row : kComplexFftRows) {
    OpRegistrar registrar(OpBuilder(row.name)
                              .Input("input", "Tcomplex")
                              .Output("output", "Tcomplex")
                              .TypeAttr("Tcomplex", kComplexTypes, DType::kComplex64)
                              .Shape(row.shape)
                              .Kernel("CPU", row.kernel)
                              .Gradient(row.grad)
                              .Doc(row.doc));
  }
  for (const RealFftRow& row : kRealFftRows) {
    OpRegistrar registrar(OpBuilder(row.name)
                              .Input("input", row.to_complex ? "Treal" : "Tcomplex")
                              .Input("fft_length", "int32")
                              .Output("output", row.to_complex ? "Tcomplex" : "Treal")
                              .TypeAttr("Treal", kFloatTypes, DType::kFloat32)
                              .TypeAttr("Tcomplex", kComplexTypes, DType::kComplex64)
                              .Shape(row.shape)
                              .Kernel("CPU", row.kernel)
                              .Gradient(row.grad)
                              .Doc(row.doc));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
