// GPU kernels for Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (float32, NHWC and NCHW)
// on cuDNN.
//
// The attrs, output sizes and padding follow the CPU kernels (src/ops/conv_util.h). cuDNN runs
// in NCHW with KCRS filters (see conv_layout.h), so images and filters are relaid around each
// call. cuDNN pads both sides of a dimension equally: the shared part of the padding goes to
// cuDNN and the rest (SAME with an odd total puts one more row or column after; EXPLICIT may be
// any split) is added to the image while it is relaid, or cut from an input gradient, as
// TensorFlow does.
#include <algorithm>
#include <climits>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/conv_layout.h"
#include "cuda/cuda_kernel.h"
#include "cuda/cudnn_api.h"
#include "flowstone/kernel.h"
#include "ops/conv_util.h"

namespace flowstone::cuda {
namespace {

using conv::Image;
using conv::Window;
using conv::WindowAttrs;

// A cuDNN handle is not safe to use from several host threads at once, and kernels of one
// session may run in parallel.
std::mutex& CudnnMutex() {
  static std::mutex mu;
  return mu;
}

// The GPU context of the kernel's device, or FailedPrecondition when cuDNN is unavailable.
Status CudnnContextOf(const KernelContext& ctx, const GpuContext** out) {
  const GpuContext& gpu = ContextOf(ctx);
  if (gpu.cudnn == nullptr || gpu.cudnn_handle == nullptr) {
    return errors::FailedPrecondition(
        ctx.node().type(), " on ", ctx.device()->name(),
        " needs cuDNN, which could not be loaded (GPU discovery logged why; `flowstone "
        "doctor` shows it too). Install cuDNN 9 (libcudnn.so.9) where the dynamic loader finds "
        "it, or place the op on the CPU with tf.device('/cpu:0').");
  }
  *out = &gpu;
  return Status::OK();
}

// Points the GPU's cuDNN handle at the device's stream, so cuDNN's work is ordered with the
// relayouts around it; called with CudnnMutex held.
Status UseStream(const KernelContext& ctx, const CudnnApi& api, cudnnHandle_t handle) {
  return CudnnCheck(api, api.cudnnSetStream(handle, StreamOf(ctx)), "cudnnSetStream");
}

// RAII owners of cuDNN descriptors.
class TensorDesc {
 public:
  explicit TensorDesc(const CudnnApi& api) : api_(api) {}
  ~TensorDesc() {
    if (desc_ != nullptr) api_.cudnnDestroyTensorDescriptor(desc_);
  }
  Status Init(const Image& image) {
    FS_RETURN_IF_ERROR(
        CudnnCheck(api_, api_.cudnnCreateTensorDescriptor(&desc_), "cudnnCreateTensorDescriptor"));
    return CudnnCheck(
        api_,
        api_.cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                        static_cast<int>(image.n), static_cast<int>(image.c),
                                        static_cast<int>(image.h), static_cast<int>(image.w)),
        "cudnnSetTensor4dDescriptor");
  }
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  const CudnnApi& api_;
  cudnnTensorDescriptor_t desc_ = nullptr;
};

// A KCRS filter: [out, in, rows, cols].
class FilterDesc {
 public:
  explicit FilterDesc(const CudnnApi& api) : api_(api) {}
  ~FilterDesc() {
    if (desc_ != nullptr) api_.cudnnDestroyFilterDescriptor(desc_);
  }
  Status Init(int64_t out, int64_t rows, int64_t cols, int64_t in) {
    FS_RETURN_IF_ERROR(
        CudnnCheck(api_, api_.cudnnCreateFilterDescriptor(&desc_), "cudnnCreateFilterDescriptor"));
    return CudnnCheck(api_,
                      api_.cudnnSetFilter4dDescriptor(
                          desc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(out),
                          static_cast<int>(in), static_cast<int>(rows), static_cast<int>(cols)),
                      "cudnnSetFilter4dDescriptor");
  }
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  const CudnnApi& api_;
  cudnnFilterDescriptor_t desc_ = nullptr;
};

class ConvDesc {
 public:
  explicit ConvDesc(const CudnnApi& api) : api_(api) {}
  ~ConvDesc() {
    if (desc_ != nullptr) api_.cudnnDestroyConvolutionDescriptor(desc_);
  }
  Status Init(const int64_t pad[2], const int64_t stride[2], const int64_t dilation[2]) {
    FS_RETURN_IF_ERROR(CudnnCheck(api_, api_.cudnnCreateConvolutionDescriptor(&desc_),
                                  "cudnnCreateConvolutionDescriptor"));
    FS_RETURN_IF_ERROR(CudnnCheck(
        api_,
        api_.cudnnSetConvolution2dDescriptor(
            desc_, static_cast<int>(pad[0]), static_cast<int>(pad[1]), static_cast<int>(stride[0]),
            static_cast<int>(stride[1]), static_cast<int>(dilation[0]),
            static_cast<int>(dilation[1]), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor"));
    return CudnnCheck(api_, api_.cudnnSetConvolutionMathType(desc_, CUDNN_FMA_MATH),
                      "cudnnSetConvolutionMathType");
  }
  cudnnConvolutionDescriptor_t get() const { return desc_; }

 private:
  const CudnnApi& api_;
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

// One convolution with every size known, split into what cuDNN does and what the relayout
// does.
struct GpuConv {
  conv::DataFormat format;  // of the caller's tensors
  Image in;                 // the caller's input image
  Image padded;             // `in` with the uneven part of the padding added
  Image out;
  int64_t filter[4];  // HWIO: rows, cols, in, out
  int64_t cudnn_pad[2];
  int64_t extra_before[2];  // rows/columns added before the image, beyond cudnn_pad
  int64_t extra_after[2];

  bool nhwc() const { return format == conv::DataFormat::kNHWC; }
  static Dims4 DimsIn(const Image& i, bool nhwc) {
    return nhwc ? Dims4{{i.n, i.h, i.w, i.c}} : Dims4{{i.n, i.c, i.h, i.w}};
  }
  // The caller's images and cuDNN's NCHW copies.
  Dims4 in_dims() const { return DimsIn(in, nhwc()); }
  Dims4 out_dims() const { return DimsIn(out, nhwc()); }
  Dims4 padded_nchw() const { return DimsIn(padded, false); }
  Dims4 out_nchw() const { return DimsIn(out, false); }
  Perm4 to_nchw() const { return nhwc() ? kNhwcToNchw : kSameOrder; }
  Perm4 from_nchw() const { return nhwc() ? kNchwToNhwc : kSameOrder; }
  Dims4 filter_hwio() const { return {{filter[0], filter[1], filter[2], filter[3]}}; }
  Dims4 filter_oihw() const { return {{filter[3], filter[2], filter[0], filter[1]}}; }
  // Shifts (in the source's dimensions) that add the uneven padding to the caller's input, and
  // that cut it from an NCHW one.
  Dims4 pad_input() const {
    return nhwc() ? Dims4{{0, extra_before[0], extra_before[1], 0}}
                  : Dims4{{0, 0, extra_before[0], extra_before[1]}};
  }
  Dims4 crop_nchw() const { return {{0, 0, -extra_before[0], -extra_before[1]}}; }
};

constexpr Dims4 kNoShift = {{0, 0, 0, 0}};

// Sizes beyond int overflow cuDNN's 4-D descriptors.
Status CheckFitsInt(const std::string& op, const Image& image, const char* name) {
  // Every size is at most the element count, so checking the count covers them all.
  if (image.n * image.h * image.w * image.c > INT_MAX) {
    return errors::InvalidArgument(op, " on the GPU: the ", name, " [", image.n, ",", image.h, ",",
                                   image.w, ",", image.c,
                                   "] has more than 2^31 - 1 elements, more than cuDNN's "
                                   "4-D descriptors address. Split the batch.");
  }
  return Status::OK();
}

Status CheckRank4(const std::string& op, const char* name, const Tensor& t) {
  if (t.rank() != 4) {
    return errors::InvalidArgument(op, ": ", name, " must be 4-dimensional, but has shape ",
                                   t.shape().ToString());
  }
  return Status::OK();
}

// Reads a host int32 size vector (input_sizes or filter_sizes) of 4 entries, or, for
// input_sizes, 2 spatial ones.
Status ReadSizes(const std::string& op, const char* name, const Tensor& t, bool allow_spatial,
                 std::vector<int64_t>* sizes) {
  if (t.rank() != 1 || !(t.num_elements() == 4 || (allow_spatial && t.num_elements() == 2))) {
    return errors::InvalidArgument(op, ": ", name, " must be a vector of 4",
                                   allow_spatial ? " or 2" : "", " sizes, but has shape ",
                                   t.shape().ToString());
  }
  sizes->clear();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const int64_t s = t.ElementAsInt64(i);
    if (s < 0) {
      return errors::InvalidArgument(op, ": ", name, " must hold non-negative sizes, but entry ", i,
                                     " is ", s);
    }
    sizes->push_back(s);
  }
  return Status::OK();
}

// Builds the problem and checks `dy` (when given) against the output it implies.
Status MakeGpuConv(const KernelContext& ctx, const WindowAttrs& attrs, const Image& in,
                   const int64_t filter[4], const Image* dy, GpuConv* p) {
  const std::string& op = ctx.node().type();
  if (filter[0] < 1 || filter[1] < 1) {
    return errors::InvalidArgument(op,
                                   ": filter rows and columns must be positive, but the "
                                   "filter is ",
                                   filter[0], "x", filter[1]);
  }
  if (in.c != filter[2]) {
    return errors::InvalidArgument(op, ": the input depth (", in.c,
                                   ") must equal the filter's input depth (", filter[2],
                                   "); grouped convolutions have no GPU kernel");
  }
  Window rows, cols;
  FS_RETURN_IF_ERROR(conv::ComputeWindow(attrs, 0, in.h, filter[0], &rows));
  FS_RETURN_IF_ERROR(conv::ComputeWindow(attrs, 1, in.w, filter[1], &cols));
  p->format = attrs.format;
  p->in = in;
  for (int k = 0; k < 4; ++k) p->filter[k] = filter[k];
  p->out = Image{in.n, rows.out, cols.out, filter[3]};
  const Window* windows[2] = {&rows, &cols};
  for (int d = 0; d < 2; ++d) {
    const Window& w = *windows[d];
    p->cudnn_pad[d] = std::min(w.pad_before, w.pad_after);
    p->extra_before[d] = w.pad_before - p->cudnn_pad[d];
    p->extra_after[d] = w.pad_after - p->cudnn_pad[d];
  }
  p->padded = Image{in.n, in.h + p->extra_before[0] + p->extra_after[0],
                    in.w + p->extra_before[1] + p->extra_after[1], in.c};
  if (dy != nullptr) {
    const int64_t expected[4] = {p->out.n, p->out.h, p->out.w, p->out.c};
    const int64_t actual[4] = {dy->n, dy->h, dy->w, dy->c};
    for (int k = 0; k < 4; ++k) {
      if (expected[k] != actual[k]) {
        return errors::InvalidArgument(
            op, ": out_backprop has shape [", dy->n, ",", dy->h, ",", dy->w, ",", dy->c,
            "] but the convolution of input [", in.n, ",", in.h, ",", in.w, ",", in.c,
            "] with filter [", filter[0], ",", filter[1], ",", filter[2], ",", filter[3],
            "] gives [", p->out.n, ",", p->out.h, ",", p->out.w, ",", p->out.c, "]");
      }
    }
  }
  FS_RETURN_IF_ERROR(CheckFitsInt(op, p->padded, "padded input"));
  return CheckFitsInt(op, p->out, "output");
}

// The descriptors of one problem.
struct Descriptors {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  explicit Descriptors(const CudnnApi& api) : x(api), y(api), w(api), conv(api) {}
  Status Init(const GpuConv& p, const WindowAttrs& attrs) {
    FS_RETURN_IF_ERROR(x.Init(p.padded));
    FS_RETURN_IF_ERROR(y.Init(p.out));
    FS_RETURN_IF_ERROR(w.Init(p.filter[3], p.filter[0], p.filter[1], p.filter[2]));
    return conv.Init(p.cudnn_pad, attrs.stride, attrs.dilation);
  }
};

// Runs `run(algo, workspace, bytes)` with the heuristics' best algorithm whose workspace can be
// allocated. `workspace_size(algo, &bytes)` returns a cuDNN status.
template <typename WorkspaceSize, typename Run>
Status RunBestAlgorithm(KernelContext& ctx, const CudnnApi& api, const char* what,
                        const cudnnConvolutionPerf_t* perf, int count,
                        const WorkspaceSize& workspace_size, const Run& run) {
  Status last_oom;
  cudnnStatus_t size_status = CUDNN_STATUS_SUCCESS;
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    size_t bytes = 0;
    const cudnnStatus_t queried = workspace_size(perf[i].algo, &bytes);
    if (queried != CUDNN_STATUS_SUCCESS) {
      // This algorithm cannot run here after all; the next one may.
      size_status = queried;
      continue;
    }
    Tensor workspace;
    if (bytes > 0) {
      Status s =
          ctx.AllocateTemp(DType::kUInt8, TensorShape{static_cast<int64_t>(bytes)}, &workspace);
      if (s.code() == Code::kResourceExhausted) {
        // A slower algorithm may need less scratch memory.
        last_oom = s;
        continue;
      }
      FS_RETURN_IF_ERROR(s);
    }
    return run(perf[i].algo, bytes > 0 ? workspace.raw_data() : nullptr, bytes);
  }
  if (!last_oom.ok()) {
    last_oom.Append(StrCat(" (the workspace of every cuDNN algorithm for ", ctx.node().type(),
                           " is too large for the memory left)"));
    return last_oom;
  }
  FS_RETURN_IF_ERROR(CudnnAlgorithmCheck(api, size_status, what));
  return errors::Unimplemented(ctx.node().type(), " on ", ctx.device()->name(),
                               ": cuDNN offers no algorithm for this convolution");
}

constexpr int kMaxAlgorithms = 16;
const float kOne = 1.0f, kZero = 0.0f;

Status FillZero(KernelContext& ctx, Tensor* t) {
  return CudaCheck(cudaMemsetAsync(t->raw_data(), 0, t->bytes(), StreamOf(ctx)), "cudaMemsetAsync");
}

// A temporary tensor of `dims` filled by Relayout from `source`.
Status Relaid(KernelContext& ctx, const Tensor& source, const Dims4& source_dims, const Perm4& perm,
              const Dims4& shift, const Dims4& dims, Tensor* out) {
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(
      DType::kFloat32, TensorShape{dims.d[0], dims.d[1], dims.d[2], dims.d[3]}, out));
  return Relayout(StreamOf(ctx), source.data<float>(), source_dims, perm, shift, dims,
                  out->data<float>());
}

// The input as NCHW with the uneven padding added.
Status InputToCudnn(KernelContext& ctx, const GpuConv& p, const Tensor& x, Tensor* out) {
  return Relaid(ctx, x, p.in_dims(), p.to_nchw(), p.pad_input(), p.padded_nchw(), out);
}

// The HWIO filter as KCRS.
Status FilterToCudnn(KernelContext& ctx, const GpuConv& p, const Tensor& f, Tensor* out) {
  return Relaid(ctx, f, p.filter_hwio(), kHwioToOihw, kNoShift, p.filter_oihw(), out);
}

// The output gradient as NCHW.
Status OutputGradToCudnn(KernelContext& ctx, const GpuConv& p, const Tensor& dy, Tensor* out) {
  return Relaid(ctx, dy, p.out_dims(), p.to_nchw(), kNoShift, p.out_nchw(), out);
}

Status AllocateNchw(KernelContext& ctx, const Dims4& dims, Tensor* out) {
  return ctx.AllocateTemp(DType::kFloat32, TensorShape{dims.d[0], dims.d[1], dims.d[2], dims.d[3]},
                          out);
}

Status Conv2DGpu(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& x = ctx.input(0);
  const Tensor& f = ctx.input(1);
  FS_RETURN_IF_ERROR(CheckRank4(op, "input", x));
  FS_RETURN_IF_ERROR(CheckRank4(op, "filter", f));
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParseConvAttrs(ctx.attrs(), &attrs));
  const int64_t filter[4] = {f.dim(0), f.dim(1), f.dim(2), f.dim(3)};
  GpuConv p;
  FS_RETURN_IF_ERROR(
      MakeGpuConv(ctx, attrs, conv::ImageOf(x.shape().dims(), attrs.format), filter, nullptr, &p));
  Tensor* y;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(conv::DimsOf(p.out, attrs.format)), &y));
  if (y->num_elements() == 0) return Status::OK();
  if (x.num_elements() == 0 || f.num_elements() == 0) return FillZero(ctx, y);

  const GpuContext* gpu;
  FS_RETURN_IF_ERROR(CudnnContextOf(ctx, &gpu));
  const CudnnApi& api = *gpu->cudnn;
  auto handle = static_cast<cudnnHandle_t>(gpu->cudnn_handle);
  Tensor x_nchw, w, y_nchw;
  FS_RETURN_IF_ERROR(InputToCudnn(ctx, p, x, &x_nchw));
  FS_RETURN_IF_ERROR(FilterToCudnn(ctx, p, f, &w));
  FS_RETURN_IF_ERROR(AllocateNchw(ctx, p.out_nchw(), &y_nchw));
  Descriptors d(api);
  FS_RETURN_IF_ERROR(d.Init(p, attrs));
  {
    std::lock_guard<std::mutex> lock(CudnnMutex());
    FS_RETURN_IF_ERROR(UseStream(ctx, api, handle));
    cudnnConvolutionPerf_t perf[kMaxAlgorithms];
    int count = 0;
    FS_RETURN_IF_ERROR(CudnnAlgorithmCheck(
        api,
        api.cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x.get(), d.w.get(), d.conv.get(),
                                                   d.y.get(), kMaxAlgorithms, &count, perf),
        "cudnnGetConvolutionForwardAlgorithm_v7"));
    FS_RETURN_IF_ERROR(RunBestAlgorithm(
        ctx, api, "cudnnGetConvolutionForwardWorkspaceSize", perf, count,
        [&](int algo, size_t* bytes) {
          return api.cudnnGetConvolutionForwardWorkspaceSize(handle, d.x.get(), d.w.get(),
                                                             d.conv.get(), d.y.get(), algo, bytes);
        },
        [&](int algo, void* workspace, size_t bytes) {
          return CudnnCheck(
              api,
              api.cudnnConvolutionForward(handle, &kOne, d.x.get(), x_nchw.raw_data(), d.w.get(),
                                          w.raw_data(), d.conv.get(), algo, workspace, bytes,
                                          &kZero, d.y.get(), y_nchw.raw_data()),
              "cudnnConvolutionForward");
        }));
  }
  return Relayout(StreamOf(ctx), y_nchw.data<float>(), p.out_nchw(), p.from_nchw(), kNoShift,
                  p.out_dims(), y->data<float>());
}

Status Conv2DBackpropInputGpu(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& f = ctx.input(1);
  const Tensor& dy = ctx.input(2);
  std::vector<int64_t> sizes;
  FS_RETURN_IF_ERROR(ReadSizes(op, "input_sizes", ctx.input(0), true, &sizes));
  FS_RETURN_IF_ERROR(CheckRank4(op, "filter", f));
  FS_RETURN_IF_ERROR(CheckRank4(op, "out_backprop", dy));
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParseConvAttrs(ctx.attrs(), &attrs));
  const int64_t filter[4] = {f.dim(0), f.dim(1), f.dim(2), f.dim(3)};
  const Image dy_image = conv::ImageOf(dy.shape().dims(), attrs.format);
  const Image in = sizes.size() == 4 ? conv::ImageOf(Dims(sizes), attrs.format)
                                     : Image{dy_image.n, sizes[0], sizes[1], filter[2]};
  GpuConv p;
  FS_RETURN_IF_ERROR(MakeGpuConv(ctx, attrs, in, filter, &dy_image, &p));
  Tensor* dx;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(conv::DimsOf(p.in, attrs.format)), &dx));
  if (dx->num_elements() == 0) return Status::OK();
  if (dy.num_elements() == 0 || f.num_elements() == 0) return FillZero(ctx, dx);

  const GpuContext* gpu;
  FS_RETURN_IF_ERROR(CudnnContextOf(ctx, &gpu));
  const CudnnApi& api = *gpu->cudnn;
  auto handle = static_cast<cudnnHandle_t>(gpu->cudnn_handle);
  Tensor w, dy_nchw, dx_nchw;
  FS_RETURN_IF_ERROR(FilterToCudnn(ctx, p, f, &w));
  FS_RETURN_IF_ERROR(OutputGradToCudnn(ctx, p, dy, &dy_nchw));
  FS_RETURN_IF_ERROR(AllocateNchw(ctx, p.padded_nchw(), &dx_nchw));
  Descriptors d(api);
  FS_RETURN_IF_ERROR(d.Init(p, attrs));
  {
    std::lock_guard<std::mutex> lock(CudnnMutex());
    FS_RETURN_IF_ERROR(UseStream(ctx, api, handle));
    cudnnConvolutionPerf_t perf[kMaxAlgorithms];
    int count = 0;
    FS_RETURN_IF_ERROR(CudnnAlgorithmCheck(
        api,
        api.cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.w.get(), d.y.get(), d.conv.get(),
                                                        d.x.get(), kMaxAlgorithms, &count, perf),
        "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
    FS_RETURN_IF_ERROR(RunBestAlgorithm(
        ctx, api, "cudnnGetConvolutionBackwardDataWorkspaceSize", perf, count,
        [&](int algo, size_t* bytes) {
          return api.cudnnGetConvolutionBackwardDataWorkspaceSize(
              handle, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), algo, bytes);
        },
        [&](int algo, void* workspace, size_t bytes) {
          return CudnnCheck(
              api,
              api.cudnnConvolutionBackwardData(handle, &kOne, d.w.get(), w.raw_data(), d.y.get(),
                                               dy_nchw.raw_data(), d.conv.get(), algo, workspace,
                                               bytes, &kZero, d.x.get(), dx_nchw.raw_data()),
              "cudnnConvolutionBackwardData");
        }));
  }
  // Back to the caller's layout, dropping the gradient of the rows and columns the uneven
  // padding added.
  return Relayout(StreamOf(ctx), dx_nchw.data<float>(), p.padded_nchw(), p.from_nchw(),
                  p.crop_nchw(), p.in_dims(), dx->data<float>());
}

Status Conv2DBackpropFilterGpu(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& x = ctx.input(0);
  const Tensor& dy = ctx.input(2);
  std::vector<int64_t> sizes;
  FS_RETURN_IF_ERROR(CheckRank4(op, "input", x));
  FS_RETURN_IF_ERROR(ReadSizes(op, "filter_sizes", ctx.input(1), false, &sizes));
  FS_RETURN_IF_ERROR(CheckRank4(op, "out_backprop", dy));
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParseConvAttrs(ctx.attrs(), &attrs));
  const int64_t filter[4] = {sizes[0], sizes[1], sizes[2], sizes[3]};
  const Image dy_image = conv::ImageOf(dy.shape().dims(), attrs.format);
  GpuConv p;
  FS_RETURN_IF_ERROR(MakeGpuConv(ctx, attrs, conv::ImageOf(x.shape().dims(), attrs.format), filter,
                                 &dy_image, &p));
  Tensor* df;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(Dims(sizes)), &df));
  if (df->num_elements() == 0) return Status::OK();
  if (x.num_elements() == 0 || dy.num_elements() == 0) return FillZero(ctx, df);

  const GpuContext* gpu;
  FS_RETURN_IF_ERROR(CudnnContextOf(ctx, &gpu));
  const CudnnApi& api = *gpu->cudnn;
  auto handle = static_cast<cudnnHandle_t>(gpu->cudnn_handle);
  Tensor x_nchw, dy_nchw, dw;
  FS_RETURN_IF_ERROR(InputToCudnn(ctx, p, x, &x_nchw));
  FS_RETURN_IF_ERROR(OutputGradToCudnn(ctx, p, dy, &dy_nchw));
  FS_RETURN_IF_ERROR(AllocateNchw(ctx, p.filter_oihw(), &dw));
  Descriptors d(api);
  FS_RETURN_IF_ERROR(d.Init(p, attrs));
  {
    std::lock_guard<std::mutex> lock(CudnnMutex());
    FS_RETURN_IF_ERROR(UseStream(ctx, api, handle));
    cudnnConvolutionPerf_t perf[kMaxAlgorithms];
    int count = 0;
    FS_RETURN_IF_ERROR(CudnnAlgorithmCheck(
        api,
        api.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), kMaxAlgorithms, &count, perf),
        "cudnnGetConvolutionBackwardFilterAlgorithm_v7"));
    FS_RETURN_IF_ERROR(RunBestAlgorithm(
        ctx, api, "cudnnGetConvolutionBackwardFilterWorkspaceSize", perf, count,
        [&](int algo, size_t* bytes) {
          return api.cudnnGetConvolutionBackwardFilterWorkspaceSize(
              handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), algo, bytes);
        },
        [&](int algo, void* workspace, size_t bytes) {
          return CudnnCheck(
              api,
              api.cudnnConvolutionBackwardFilter(
                  handle, &kOne, d.x.get(), x_nchw.raw_data(), d.y.get(), dy_nchw.raw_data(),
                  d.conv.get(), algo, workspace, bytes, &kZero, d.w.get(), dw.raw_data()),
              "cudnnConvolutionBackwardFilter");
        }));
  }
  return Relayout(StreamOf(ctx), dw.data<float>(), p.filter_oihw(), kOihwToHwio, kNoShift,
                  p.filter_hwio(), df->data<float>());
}

FS_REGISTER_GPU_KERNEL(GpuKernel("Conv2D", Conv2DGpu).Types({DType::kFloat32}).Needs("cuDNN"));
FS_REGISTER_GPU_KERNEL(GpuKernel("Conv2DBackpropInput", Conv2DBackpropInputGpu)
                           .Needs("cuDNN")
                           .Types({DType::kFloat32})
                           .HostMemory("input_sizes"));
FS_REGISTER_GPU_KERNEL(GpuKernel("Conv2DBackpropFilter", Conv2DBackpropFilterGpu)
                           .Needs("cuDNN")
                           .Types({DType::kFloat32})
                           .HostMemory("filter_sizes"));

}  // namespace
}  // namespace flowstone::cuda
