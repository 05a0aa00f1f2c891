#include "ops/nn/volume_util.h"

#include <string>
#include <vector>

namespace flowstone::volume {

namespace {

// Where batch, channels and the three spatial dimensions sit in a 5-D tensor.
struct Layout5 {
  int n, c, spatial[3];
  explicit Layout5(bool channels_first)
      : n(0),
        c(channels_first ? 1 : 4),
        spatial{channels_first ? 2 : 1, channels_first ? 3 : 2, channels_first ? 4 : 3} {}
};

std::string ListString(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += StrCat(i ? ", " : "", values[i]);
  return text + "]";
}

// Reads an attr given for all five dimensions, keeping its spatial entries; the batch and
// channel entries must be 1.
Status ParseFiveDims(const AttrMap& attrs, const std::string& name, const Layout5& layout,
                     int64_t out[3]) {
  std::vector<int64_t> values(5, 1);
  if (const AttrValue* v = attrs.Find(name)) {
    const auto* list = std::get_if<std::vector<int64_t>>(v);
    if (list == nullptr) return errors::InvalidArgument("attr '", name, "' must be a list of ints");
    values = *list;
  }
  if (values.size() != 5) {
    return errors::InvalidArgument(
        "Sliding window ", name, " field must specify 5 dimensions, but got ", ListString(values));
  }
  if (values[layout.n] != 1 || values[layout.c] != 1) {
    return errors::InvalidArgument("Current implementation does not yet support ", name,
                                   " in the batch and depth dimensions, but got ",
                                   ListString(values));
  }
  for (int d = 0; d < 3; ++d) {
    out[d] = values[layout.spatial[d]];
    if (out[d] < 1 || out[d] > 0x7fffffff) {
      return errors::InvalidArgument(name, " must be positive (and at most ", 0x7fffffff,
                                     ") in every spatial dimension, but got ", ListString(values));
    }
  }
  return Status::OK();
}

// The 2-D attrs whose dimension 0 is spatial dimension `dim` of `attrs`, so the 2-D ops' window
// rules apply unchanged.
conv::WindowAttrs AsWindowAttrs(const VolumeAttrs& attrs, int dim) {
  conv::WindowAttrs w;
  w.padding = attrs.padding;
  w.ksize[0] = attrs.ksize[dim];
  w.stride[0] = attrs.stride[dim];
  w.dilation[0] = attrs.dilation[dim];
  return w;
}

}  // namespace

VolumeStrides::VolumeStrides(const Volume& v, bool channels_first) {
  const int64_t plane = v.spatial[1] * v.spatial[2];
  if (channels_first) {
    spatial[2] = 1;
    spatial[1] = v.spatial[2];
    spatial[0] = plane;
    c = v.spatial[0] * plane;
  } else {
    c = 1;
    spatial[2] = v.c;
    spatial[1] = v.spatial[2] * v.c;
    spatial[0] = plane * v.c;
  }
  n = v.spatial[0] * plane * v.c;
}

Volume VolumeOf(const Dims& dims, bool channels_first) {
  const Layout5 l(channels_first);
  Volume v;
  v.n = dims[l.n];
  v.c = dims[l.c];
  for (int d = 0; d < 3; ++d) v.spatial[d] = dims[l.spatial[d]];
  return v;
}

Dims DimsOf(const Volume& v, bool channels_first) {
  const Layout5 l(channels_first);
  Dims dims;
  dims.resize(5);
  dims[l.n] = v.n;
  dims[l.c] = v.c;
  for (int d = 0; d < 3; ++d) dims[l.spatial[d]] = v.spatial[d];
  return dims;
}

Status ParseVolumeAttrs(const AttrMap& attrs, bool pooling, VolumeAttrs* out) {
  const std::string format = attrs.GetOr<std::string>("data_format", "NDHWC");
  if (format != "NDHWC" && format != "NCDHW") {
    return errors::InvalidArgument("Value for attr 'data_format' of \"", format,
                                   "\" is not in the list of allowed values: \"NDHWC\", "
                                   "\"NCDHW\"");
  }
  out->channels_first = format == "NCDHW";
  const Layout5 layout(out->channels_first);
  std::string padding;
  FS_RETURN_IF_ERROR(attrs.Get("padding", &padding));
  if (padding == "SAME") {
    out->padding = conv::Padding::kSame;
  } else if (padding == "VALID") {
    out->padding = conv::Padding::kValid;
  } else {
    return errors::InvalidArgument("Value for attr 'padding' of \"", padding,
                                   "\" is not in the list of allowed values: \"SAME\", \"VALID\"");
  }
  FS_RETURN_IF_ERROR(ParseFiveDims(attrs, "strides", layout, out->stride));
  if (pooling) return ParseFiveDims(attrs, "ksize", layout, out->ksize);
  return ParseFiveDims(attrs, "dilations", layout, out->dilation);
}

Status ComputeWindow(const VolumeAttrs& attrs, int dim, int64_t in, int64_t kernel,
                     conv::Window* out) {
  return conv::ComputeWindow(AsWindowAttrs(attrs, dim), 0, in, kernel, out);
}

Status WindowOutputSize(const VolumeAttrs& attrs, int dim, int64_t in, int64_t kernel,
                        int64_t* out) {
  return conv::WindowOutputSize(AsWindowAttrs(attrs, dim), 0, in, kernel, out);
}

dnnl::memory::desc OneDnnDesc(const Volume& v, bool channels_first) {
  using dnnl::memory;
  return memory::desc({v.n, v.c, v.spatial[0], v.spatial[1], v.spatial[2]}, memory::data_type::f32,
                      channels_first ? memory::format_tag::ncdhw : memory::format_tag::ndhwc);
}

Status CheckRank5(const std::string& op, const char* name, const TensorShape& shape) {
  if (shape.rank() != 5) {
    return errors::InvalidArgument(op, ": ", name, " must be 5-dimensional, but got shape ",
                                   shape.ToString());
  }
  return Status::OK();
}

}  // namespace flowstone::volume
