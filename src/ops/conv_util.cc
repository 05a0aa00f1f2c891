#include "ops/conv_util.h"

#include <algorithm>
#include <vector>

namespace flowstone::conv {

Image ImageOf(const Dims& dims, DataFormat format) {
  Layout l = Layout::Of(format);
  return Image{dims[l.n], dims[l.h], dims[l.w], dims[l.c]};
}

Dims DimsOf(const Image& image, DataFormat format) {
  Layout l = Layout::Of(format);
  Dims dims;
  dims.resize(4);
  dims[l.n] = image.n;
  dims[l.h] = image.h;
  dims[l.w] = image.w;
  dims[l.c] = image.c;
  return dims;
}

ImageStrides::ImageStrides(const Image& image, DataFormat format) {
  if (format == DataFormat::kNHWC) {
    c = 1;
    w = image.c;
    h = image.w * image.c;
  } else {
    w = 1;
    h = image.w;
    c = image.h * image.w;
  }
  n = image.h * image.w * image.c;
}

namespace {

// Window attrs beyond int32 serve no real input and would overflow the size arithmetic.
constexpr int64_t kMaxWindowAttr = 0x7fffffff;

Status ParseDataFormat(const AttrMap& attrs, DataFormat* out) {
  std::string format = attrs.GetOr<std::string>("data_format", "NHWC");
  if (format == "NHWC") {
    *out = DataFormat::kNHWC;
  } else if (format == "NCHW") {
    *out = DataFormat::kNCHW;
  } else {
    return errors::InvalidArgument("Value for attr 'data_format' of \"", format,
                                   "\" is not in the list of allowed values: \"NHWC\", \"NCHW\"");
  }
  return Status::OK();
}

std::string ListString(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += StrCat(i ? ", " : "", values[i]);
  return text + "]";
}

// Reads a per-dimension attr given for all four dimensions of the data format (strides,
// dilations, ksize) and keeps its spatial entries; the batch and channel entries must be 1.
Status ParseFourDims(const AttrMap& attrs, const std::string& name, const Layout& layout,
                     int64_t fallback, bool pooling, int64_t out[2]) {
  std::vector<int64_t> values;
  if (const AttrValue* v = attrs.Find(name)) {
    const auto* list = std::get_if<std::vector<int64_t>>(v);
    if (list == nullptr) return errors::InvalidArgument("attr '", name, "' must be a list of ints");
    values = *list;
  } else {
    values.assign(4, fallback);
  }
  const char* field = name == "strides" ? (pooling ? "stride" : "strides") : name.c_str();
  if (values.size() != 4) {
    return errors::InvalidArgument("Sliding window ", field,
                                   " field must specify 4 dimensions, "
                                   "but got ",
                                   ListString(values));
  }
  if (values[layout.n] != 1 || values[layout.c] != 1) {
    if (pooling) {
      return errors::InvalidArgument(
          "Pooling is not yet supported on the batch or depth dimension: ", name,
          " must be 1 there, but got ", ListString(values));
    }
    return errors::InvalidArgument("Current implementation does not yet support ", name,
                                   " in the batch and depth dimensions, but got ",
                                   ListString(values));
  }
  out[0] = values[layout.h];
  out[1] = values[layout.w];
  if (out[0] < 1 || out[1] < 1) {
    if (name == "dilations") {
      return errors::InvalidArgument("Dilated rates should be larger than 0, but got ",
                                     ListString(values));
    }
    if (name == "ksize") {
      return errors::InvalidArgument("Sliding window ksize must be positive, but got ",
                                     ListString(values));
    }
    return errors::InvalidArgument("Row and column strides should be larger than 0, but got ",
                                   ListString(values));
  }
  if (out[0] > kMaxWindowAttr || out[1] > kMaxWindowAttr) {
    return errors::InvalidArgument(name, " must be at most ", kMaxWindowAttr, ", but got ",
                                   ListString(values));
  }
  return Status::OK();
}

Status ParsePadding(const AttrMap& attrs, const Layout& layout, WindowAttrs* out) {
  std::string padding;
  FS_RETURN_IF_ERROR(attrs.Get("padding", &padding));
  const bool has_explicit = attrs.Has("explicit_paddings");
  if (padding == "SAME") {
    out->padding = Padding::kSame;
  } else if (padding == "VALID") {
    out->padding = Padding::kValid;
  } else if (padding == "EXPLICIT" && has_explicit) {
    out->padding = Padding::kExplicit;
  } else {
    return errors::InvalidArgument("Value for attr 'padding' of \"", padding,
                                   "\" is not in the list of allowed values: \"SAME\", \"VALID\"",
                                   has_explicit ? ", \"EXPLICIT\"" : "");
  }
  if (!has_explicit) return Status::OK();
  std::vector<int64_t> pads = attrs.GetOr<std::vector<int64_t>>("explicit_paddings", {});
  if (out->padding != Padding::kExplicit) {
    if (!pads.empty()) {
      return errors::InvalidArgument(
          "explicit_paddings attribute must be empty if the padding "
          "attribute is not EXPLICIT, but got ",
          ListString(pads));
    }
    return Status::OK();
  }
  if (pads.size() != 8) {
    return errors::InvalidArgument(
        "explicit_paddings attribute must contain 8 values (a before "
        "and after pair for each dimension), but got: ",
        pads.size());
  }
  for (int64_t p : pads) {
    if (p > kMaxWindowAttr) {
      return errors::InvalidArgument("explicit_paddings must be at most ", kMaxWindowAttr,
                                     ", but got ", ListString(pads));
    }
    if (p < 0) {
      return errors::InvalidArgument(
          "All elements of explicit_paddings must be nonnegative, "
          "but got ",
          ListString(pads));
    }
  }
  if (pads[2 * layout.n] || pads[2 * layout.n + 1] || pads[2 * layout.c] ||
      pads[2 * layout.c + 1]) {
    return errors::InvalidArgument(
        "Nonzero explicit padding in the batch or depth dimensions is "
        "not supported, but got ",
        ListString(pads));
  }
  const int spatial[2] = {layout.h, layout.w};
  for (int d = 0; d < 2; ++d) {
    out->explicit_pad[d][0] = pads[2 * spatial[d]];
    out->explicit_pad[d][1] = pads[2 * spatial[d] + 1];
  }
  return Status::OK();
}

}  // namespace

Status ParseConvAttrs(const AttrMap& attrs, WindowAttrs* out) {
  FS_RETURN_IF_ERROR(ParseDataFormat(attrs, &out->format));
  Layout layout = Layout::Of(out->format);
  FS_RETURN_IF_ERROR(ParseFourDims(attrs, "strides", layout, 1, false, out->stride));
  FS_RETURN_IF_ERROR(ParseFourDims(attrs, "dilations", layout, 1, false, out->dilation));
  return ParsePadding(attrs, layout, out);
}

Status ParsePoolAttrs(const AttrMap& attrs, WindowAttrs* out) {
  FS_RETURN_IF_ERROR(ParseDataFormat(attrs, &out->format));
  Layout layout = Layout::Of(out->format);
  if (!attrs.Has("ksize")) return errors::InvalidArgument("missing attr 'ksize'");
  FS_RETURN_IF_ERROR(ParseFourDims(attrs, "ksize", layout, 1, true, out->ksize));
  FS_RETURN_IF_ERROR(ParseFourDims(attrs, "strides", layout, 1, true, out->stride));
  FS_RETURN_IF_ERROR(ParsePadding(attrs, layout, out));
  // A window lying wholly in the padding would have nothing to pool.
  for (int d = 0; d < 2; ++d) {
    for (int side = 0; side < 2; ++side) {
      if (out->explicit_pad[d][side] >= out->ksize[d]) {
        return errors::InvalidArgument("explicit padding (", out->explicit_pad[d][side],
                                       ") must be smaller than the window size (", out->ksize[d],
                                       ") in each spatial dimension");
      }
    }
  }
  return Status::OK();
}

Status ComputeWindow(const WindowAttrs& attrs, int dim, int64_t in, int64_t kernel, Window* out) {
  Window w;
  w.in = in;
  w.kernel = kernel;
  w.stride = attrs.stride[dim];
  w.dilation = attrs.dilation[dim];
  if (in < 0 || kernel < 1) {
    return errors::InvalidArgument(
        "Sliding window sizes must be non-negative and kernels "
        "positive, but got input size ",
        in, " and kernel size ", kernel);
  }
  // Huge dilations, strides or paddings (which the attrs allow) must not overflow the window
  // arithmetic below: the dilated kernel, the input plus both paddings plus a stride all fit.
  int64_t eff, padded, unused;
  const bool explicit_padding = attrs.padding == Padding::kExplicit;
  const int64_t pad_before = explicit_padding ? attrs.explicit_pad[dim][0] : 0;
  const int64_t pad_after = explicit_padding ? attrs.explicit_pad[dim][1] : 0;
  if (__builtin_mul_overflow(kernel - 1, w.dilation, &eff) ||
      __builtin_add_overflow(eff, 1, &eff) || __builtin_add_overflow(in, pad_before, &padded) ||
      __builtin_add_overflow(padded, pad_after, &padded) ||
      __builtin_add_overflow(padded, w.stride, &unused)) {
    return errors::InvalidArgument("Sliding window arithmetic overflows int64: input size ", in,
                                   ", kernel size ", kernel, ", dilation ", w.dilation, ", stride ",
                                   w.stride, ", paddings ", pad_before, " and ", pad_after);
  }
  switch (attrs.padding) {
    case Padding::kValid:
      // C++ division truncates, as TensorFlow's does: an input one short of the kernel gives an
      // empty output, a shorter one an error.
      w.out = (in - eff + w.stride) / w.stride;
      break;
    case Padding::kSame: {
      w.out = (in + w.stride - 1) / w.stride;
      // (out - 1) * stride < in, so adding eff last cannot overflow.
      int64_t total = std::max<int64_t>((w.out - 1) * w.stride - in + eff, 0);
      w.pad_before = total / 2;
      w.pad_after = total - w.pad_before;
      break;
    }
    case Padding::kExplicit:
      w.pad_before = pad_before;
      w.pad_after = pad_after;
      w.out = (padded - eff + w.stride) / w.stride;
      break;
  }
  if (w.out < 0) {
    return errors::InvalidArgument("Computed output size would be negative: ", w.out,
                                   " [input_size: ", in, ", effective_filter_size: ", eff,
                                   ", stride: ", w.stride, "]");
  }
  *out = w;
  return Status::OK();
}

Status WindowOutputSize(const WindowAttrs& attrs, int dim, int64_t in, int64_t kernel,
                        int64_t* out) {
  if (in < 0 || kernel < 0) {
    *out = -1;
    return Status::OK();
  }
  Window w;
  FS_RETURN_IF_ERROR(ComputeWindow(attrs, dim, in, kernel, &w));
  *out = w.out;
  return Status::OK();
}

}  // namespace flowstone::conv
