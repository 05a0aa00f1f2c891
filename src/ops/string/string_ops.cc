// Elementwise string ops: StringJoin, StringLength, StringUpper/StringLower (ASCII), StringStrip,
// Substr, StringToNumber, AsString, ReduceJoin, EncodeBase64/DecodeBase64 (web-safe alphabet) and
// DecodeRaw. None is differentiable.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

// The shape of an elementwise result over inputs that each have it or are scalars (TF's rule
// for StringJoin and Substr's arguments), or InvalidArgument naming the shapes.
Status ScalarOrSameShape(const std::vector<const Tensor*>& inputs, const char* op,
                         TensorShape* out) {
  *out = TensorShape{};
  for (const Tensor* t : inputs) {
    if (t->rank() == 0) continue;
    if (out->rank() == 0) {
      *out = t->shape();
    } else if (t->shape() != *out) {
      return errors::InvalidArgument(op, ": inputs must be scalars or all of one shape, got ",
                                     out->ToString(), " and ", t->shape().ToString());
    }
  }
  return Status::OK();
}

// Element i of `t`, a scalar standing for every element.
template <typename T>
const T& At(const Tensor& t, int64_t i) {
  return t.data<T>()[t.rank() == 0 ? 0 : i];
}

Status ScalarOrSameShapeFn(InferenceContext& ctx) {
  PartialShape out(Dims{});
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const PartialShape& s = ctx.input(i);
    if (s.known_rank() && s.rank() == 0) continue;
    PartialShape merged;
    if (out.known_rank() && out.rank() == 0) {
      out = s;
    } else if (out.Merge(s, &merged).ok()) {
      out = merged;
    } else {
      return errors::InvalidArgument(ctx.op_type(),
                                     ": inputs must be scalars or all of one "
                                     "shape, got ",
                                     out.ToString(), " and ", s.ToString());
    }
  }
  ctx.set_output(0, out);
  return Status::OK();
}

// --- StringJoin -----------------------------------------------------------------------------

Status StringJoinKernel(KernelContext& ctx) {
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(&ctx.input(i));
  TensorShape shape;
  FS_RETURN_IF_ERROR(ScalarOrSameShape(inputs, "StringJoin", &shape));
  const std::string separator = ctx.attrs().GetOr<std::string>("separator", "");
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
  std::string* dst = out->data<std::string>();
  for (int64_t i = 0; i < out->num_elements(); ++i) {
    std::string joined;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (k > 0) joined += separator;
      joined += At<std::string>(*inputs[k], i);
    }
    dst[i] = std::move(joined);
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StringJoin")
                   .InputList("inputs", "string", "N")
                   .Output("output", "string")
                   .Attr("separator", "")
                   .Shape(ScalarOrSameShapeFn)
                   .Kernel("CPU", StringJoinKernel)
                   .NotDifferentiable()
                   .Doc("The inputs joined elementwise with `separator` (scalars broadcast)."));

// --- StringLength, StringUpper, StringLower ---------------------------------------------------

// Code points of UTF-8 text: bytes that do not continue a multi-byte sequence.
int32_t Utf8Length(const std::string& s) {
  int32_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

Status StringLengthKernel(KernelContext& ctx) {
  const std::string unit = ctx.attrs().GetOr<std::string>("unit", "BYTE");
  if (unit != "BYTE" && unit != "UTF8_CHAR") {
    return errors::InvalidArgument("unit must be \"BYTE\" or \"UTF8_CHAR\", got \"", unit, "\"");
  }
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    const std::string& s = in.data<std::string>()[i];
    out->data<int32_t>()[i] = unit == "BYTE" ? static_cast<int32_t>(s.size()) : Utf8Length(s);
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StringLength")
                   .Input("input", "string")
                   .Output("output", "int32")
                   .Attr("unit", "BYTE")
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", StringLengthKernel)
                   .NotDifferentiable()
                   .Doc("The length of each string in bytes, or in UTF-8 characters."));

char AsciiUpper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }
char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

template <char (*kConvert)(char)>
Status ChangeCaseKernel(KernelContext& ctx) {
  const std::string encoding = ctx.attrs().GetOr<std::string>("encoding", "");
  if (!encoding.empty()) {
    return errors::InvalidArgument("encoding '", encoding,
                                   "' is not supported: only \"\" (ASCII letters) is");
  }
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    std::string s = in.data<std::string>()[i];
    for (char& c : s) c = kConvert(c);
    out->data<std::string>()[i] = std::move(s);
  }
  return Status::OK();
}

struct CaseRow {
  const char* name;
  KernelFn kernel;
  const char* doc;
};

const CaseRow kCaseOps[] = {
    {"StringUpper", ChangeCaseKernel<AsciiUpper>, "ASCII letters made upper case."},
    {"StringLower", ChangeCaseKernel<AsciiLower>, "ASCII letters made lower case."},
};

const bool kCaseOpsRegistered = [] {
  for (const CaseRow& row : kCaseOps) {
    OpBuilder builder(row.name);
    OpRegistrar registrar(builder.Input("input", "string")
                              .Output("output", "string")
                              .Attr("encoding", "")
                              .Shape(shape_fns::Unchanged)
                              .Kernel("CPU", row.kernel)
                              .NotDifferentiable()
                              .Doc(row.doc));
  }
  return true;
}();

// --- StringStrip --------------------------------------------------------------------------

bool IsAsciiWhitespace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

Status StringStripKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    const std::string& s = in.data<std::string>()[i];
    size_t begin = 0, end = s.size();
    while (begin < end && IsAsciiWhitespace(s[begin])) ++begin;
    while (end > begin && IsAsciiWhitespace(s[end - 1])) --end;
    out->data<std::string>()[i] = s.substr(begin, end - begin);
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StringStrip")
                   .Input("input", "string")
                   .Output("output", "string")
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", StringStripKernel)
                   .NotDifferentiable()
                   .Doc("Each string without its leading and trailing ASCII whitespace."));

// --- Substr ---------------------------------------------------------------------------------

Status SubstrKernel(KernelContext& ctx) {
  const std::string unit = ctx.attrs().GetOr<std::string>("unit", "BYTE");
  if (unit != "BYTE") {
    return errors::Unimplemented("Substr: unit \"", unit, "\" is not supported; use \"BYTE\"");
  }
  const Tensor& in = ctx.input(0);
  const Tensor& pos = ctx.input(1);
  const Tensor& len = ctx.input(2);
  TensorShape shape;
  FS_RETURN_IF_ERROR(ScalarOrSameShape({&in, &pos, &len}, "Substr", &shape));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
  for (int64_t i = 0; i < out->num_elements(); ++i) {
    const std::string& s = At<std::string>(in, i);
    const int64_t size = static_cast<int64_t>(s.size());
    int64_t p = pos.rank() == 0 ? pos.ElementAsInt64(0) : pos.ElementAsInt64(i);
    const int64_t n = len.rank() == 0 ? len.ElementAsInt64(0) : len.ElementAsInt64(i);
    if (p < 0) p += size;  // negative positions count from the end, as in TF 2
    if (p < 0 || p > size) {
      return errors::InvalidArgument("pos ", p, " out of range for string b'", s, "' at index ", i);
    }
    out->data<std::string>()[i] =
        s.substr(static_cast<size_t>(p), static_cast<size_t>(std::max<int64_t>(n, 0)));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Substr")
                   .Input("input", "string")
                   .Input("pos", "T")
                   .Input("len", "T")
                   .Output("output", "string")
                   .TypeAttr("T", array_util::kIndexTypes)
                   .Attr("unit", "BYTE")
                   .Shape(ScalarOrSameShapeFn)
                   .Kernel("CPU", SubstrKernel)
                   .NotDifferentiable()
                   .Doc("len bytes of each string from pos (a pos past the end is an error)."));

// --- StringToNumber -------------------------------------------------------------------------

template <typename T>
bool ParseNumber(const std::string& s, T* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  if constexpr (std::is_floating_point_v<T>) {
    const double v = std::strtod(s.c_str(), &end);
    *out = static_cast<T>(v);
  } else {
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return false;
    *out = static_cast<T>(v);
  }
  while (end != nullptr && *end == ' ') ++end;
  return errno == 0 && end != nullptr && *end == '\0';
}

Status StringToNumberKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  auto convert = [&]<typename T>() -> Status {
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      const std::string& s = in.data<std::string>()[i];
      if (!ParseNumber<T>(s, &out->data<T>()[i])) {
        return errors::InvalidArgument("StringToNumberOp could not correctly convert string: ", s);
      }
    }
    return Status::OK();
  };
  switch (out->dtype()) {
    case DType::kFloat32:
      return convert.operator()<float>();
    case DType::kFloat64:
      return convert.operator()<double>();
    case DType::kInt32:
      return convert.operator()<int32_t>();
    default:
      return convert.operator()<int64_t>();
  }
}

FS_REGISTER_OP(OpBuilder("StringToNumber")
                   .Input("string_tensor", "string")
                   .Output("output", "out_type")
                   .TypeAttr("out_type", kRealTypes, DType::kFloat32)
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", StringToNumberKernel)
                   .NotDifferentiable()
                   .Doc("Each string parsed as a number of out_type."));

// --- AsString -------------------------------------------------------------------------------

Status AsStringKernel(KernelContext& ctx) {
  const AttrMap& attrs = ctx.attrs();
  const int64_t precision = attrs.GetOr<int64_t>("precision", -1);
  const bool scientific = attrs.GetOr<bool>("scientific", false);
  const bool shortest = attrs.GetOr<bool>("shortest", false);
  const int64_t width = attrs.GetOr<int64_t>("width", -1);
  const std::string fill = attrs.GetOr<std::string>("fill", "");
  if (scientific && shortest) {
    return errors::InvalidArgument("Cannot select both scientific and shortest notation");
  }
  if (fill.size() > 1) {
    return errors::InvalidArgument("Fill string must be one or fewer characters");
  }
  const Tensor& in = ctx.input(0);
  const bool floating = IsFloating(in.dtype()) || IsComplex(in.dtype());
  if (!floating && (precision >= 0 || scientific || shortest)) {
    return errors::InvalidArgument(
        "precision, scientific and shortest apply to floats only; "
        "got dtype ",
        DTypeName(in.dtype()));
  }
  // TF's printf format: %[fill][width][.precision](f|e|g) or %[fill][width]lld.
  std::string format = "%";
  if (fill == "0") format += "0";
  if (fill == "-") format += "-";
  if (width >= 0) format += std::to_string(width);
  if (floating) {
    if (precision >= 0) format += "." + std::to_string(precision);
    format += scientific ? "e" : shortest ? "g" : "f";
  } else {
    format += "lld";
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  char buffer[512];
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    if (in.dtype() == DType::kBool) {
      out->data<std::string>()[i] = in.data<bool>()[i] ? "true" : "false";
      continue;
    }
    if (IsComplex(in.dtype())) {
      // "(real,imag)", each part in the float format, as TensorFlow writes complex numbers.
      const complex128 z = in.dtype() == DType::kComplex64 ? complex128(in.data<complex64>()[i])
                                                           : in.data<complex128>()[i];
      std::snprintf(buffer, sizeof(buffer), ("(" + format + "," + format + ")").c_str(), z.real(),
                    z.imag());
    } else if (floating) {
      std::snprintf(buffer, sizeof(buffer), format.c_str(), in.ElementAsDouble(i));
    } else {
      std::snprintf(buffer, sizeof(buffer), format.c_str(),
                    static_cast<long long>(in.ElementAsInt64(i)));
    }
    out->data<std::string>()[i] = buffer;
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("AsString")
                   .Input("input", "T")
                   .Output("output", "string")
                   .TypeAttr("T", kAllTypes)
                   .Attr("precision", -1)
                   .Attr("scientific", false)
                   .Attr("shortest", false)
                   .Attr("width", -1)
                   .Attr("fill", "")
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", AsStringKernel)
                   .NotDifferentiable()
                   .Doc("Each number formatted as a string (printf's %f, %e, %g or %d)."));

// --- ReduceJoin -----------------------------------------------------------------------------

Status ReduceJoinKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const bool keep_dims = ctx.attrs().GetOr<bool>("keep_dims", false);
  const std::string separator = ctx.attrs().GetOr<std::string>("separator", "");
  const int rank = in.rank();
  std::vector<bool> reduced(rank, false);
  const std::vector<int64_t> axes = array_util::IntValues(ctx.input(1));
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return errors::InvalidArgument("Invalid reduction dimension ", axis, " for input with ", rank,
                                     " dimension(s)");
    }
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (reduced[a]) return errors::InvalidArgument("Duplicate reduction dimension ", axis);
    reduced[a] = true;
  }
  if (ctx.input(1).rank() == 1 && axes.empty()) reduced.assign(rank, false);
  TensorShape out_shape;
  for (int d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out_shape.AddDim(in.dim(d));
    } else if (keep_dims) {
      out_shape.AddDim(1);
    }
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  std::vector<bool> started(out->num_elements(), false);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    int64_t o = 0;
    for (int d = 0; d < rank; ++d) {
      if (!reduced[d]) o = o * in.dim(d) + index[d];
    }
    std::string& dst = out->data<std::string>()[o];
    if (started[o]) dst += separator;
    dst += in.data<std::string>()[i];
    started[o] = true;
    for (int d = rank - 1; d >= 0 && ++index[d] == in.dim(d); --d) index[d] = 0;
  }
  return Status::OK();
}

Status ReduceJoinShape(InferenceContext& ctx) {
  const Tensor* axes = ctx.input_value(1);
  const PartialShape& in = ctx.input(0);
  if (axes == nullptr || !in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  const bool keep_dims = ctx.attrs().GetOr<bool>("keep_dims", false);
  std::vector<bool> reduced(in.rank(), false);
  for (int64_t axis : array_util::IntValues(*axes)) {
    if (axis < -in.rank() || axis >= in.rank()) {
      return errors::InvalidArgument("Invalid reduction dimension ", axis, " for input with ",
                                     in.rank(), " dimension(s)");
    }
    reduced[axis < 0 ? axis + in.rank() : axis] = true;
  }
  std::vector<int64_t> dims;
  for (int d = 0; d < in.rank(); ++d) {
    if (!reduced[d]) {
      dims.push_back(in.dim(d));
    } else if (keep_dims) {
      dims.push_back(1);
    }
  }
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ReduceJoin")
                   .Input("inputs", "string")
                   .Input("reduction_indices", "int32")
                   .Output("output", "string")
                   .Attr("keep_dims", false)
                   .Attr("separator", "")
                   .Shape(ReduceJoinShape)
                   .Kernel("CPU", ReduceJoinKernel)
                   .NotDifferentiable()
                   .Doc("Strings joined along the given axes, in order, with `separator`."));

// --- EncodeBase64, DecodeBase64 -------------------------------------------------------------

// The web-safe alphabet TF uses ('-' and '_' for '+' and '/').
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string EncodeBase64(const std::string& in, bool pad) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kBase64[(v >> k) & 63];
  }
  const size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<unsigned char>(in[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    if (rest == 2) out += kBase64[(v >> 6) & 63];
    if (pad) out.append(3 - rest, '=');
  }
  return out;
}

bool DecodeBase64(const std::string& in, std::string* out) {
  int values[256];
  std::fill(std::begin(values), std::end(values), -1);
  for (int k = 0; k < 64; ++k) values[static_cast<unsigned char>(kBase64[k])] = k;
  size_t end = in.size();
  while (end > 0 && in[end - 1] == '=') --end;
  if (in.size() - end > 2 || end % 4 == 1) return false;
  out->clear();
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < end; ++i) {
    const int v = values[static_cast<unsigned char>(in[i])];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      *out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return true;
}

Status EncodeBase64Kernel(KernelContext& ctx) {
  const bool pad = ctx.attrs().GetOr<bool>("pad", false);
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    out->data<std::string>()[i] = EncodeBase64(in.data<std::string>()[i], pad);
  }
  return Status::OK();
}

Status DecodeBase64Kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    if (!DecodeBase64(in.data<std::string>()[i], &out->data<std::string>()[i])) {
      return errors::InvalidArgument("Invalid character found in base64: element ", i,
                                     " is not web-safe base64");
    }
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("EncodeBase64")
                   .Input("input", "string")
                   .Output("output", "string")
                   .Attr("pad", false)
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", EncodeBase64Kernel)
                   .NotDifferentiable()
                   .Doc("Each string in web-safe base64 ('=' padding when pad)."));

FS_REGISTER_OP(OpBuilder("DecodeBase64")
                   .Input("input", "string")
                   .Output("output", "string")
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", DecodeBase64Kernel)
                   .NotDifferentiable()
                   .Doc("Each web-safe base64 string decoded (padding optional)."));

// --- DecodeRaw ------------------------------------------------------------------------------

Status DecodeRawShape(InferenceContext& ctx) {
  const PartialShape& in = ctx.input(0);
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims = in.ToVector();
  dims.push_back(-1);
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

Status DecodeRawKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const DType type = ctx.output_type(0);
  const size_t width = DTypeSize(type);
  const bool little_endian = ctx.attrs().GetOr<bool>("little_endian", true);
  int64_t size = -1;
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    const size_t bytes = in.data<std::string>()[i].size();
    if (bytes % width != 0) {
      return errors::InvalidArgument("Input to DecodeRaw has length ", bytes,
                                     " that is not a multiple of ", width, ", the size of ",
                                     DTypeShortName(type));
    }
    const int64_t n = static_cast<int64_t>(bytes / width);
    if (size >= 0 && n != size) {
      return errors::InvalidArgument(
          "DecodeRaw requires input strings to all be the same size, but element ", i, " has size ",
          bytes, " != ", size * static_cast<int64_t>(width));
    }
    size = n;
  }
  TensorShape shape = in.shape();
  shape.AddDim(std::max<int64_t>(size, 0));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
  char* dst = static_cast<char*>(out->raw_data());
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    const std::string& s = in.data<std::string>()[i];
    std::memcpy(dst, s.data(), s.size());
    // The host is little-endian: big-endian input has each element's bytes reversed.
    if (!little_endian && width > 1) {
      for (size_t e = 0; e < s.size(); e += width) std::reverse(dst + e, dst + e + width);
    }
    dst += s.size();
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("DecodeRaw")
                   .Input("bytes", "string")
                   .Output("output", "out_type")
                   .TypeAttr("out_type", kAllTypes)
                   .Attr("little_endian", true)
                   .Shape(DecodeRawShape)
                   .Kernel("CPU", DecodeRawKernel)
                   .NotDifferentiable()
                   .Doc("Each string's bytes read as a vector of out_type."));

}  // namespace
}  // namespace flowstone
