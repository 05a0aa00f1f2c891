#include "flowstone/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace flowstone {

Buffer::~Buffer() {
  if (object_dtype_ == DType::kVariant) {
    Variant* variants = static_cast<Variant*>(data_);
    for (int64_t i = 0; i < num_objects_; ++i) variants[i].~Variant();
  } else if (object_dtype_ == DType::kString) {
    using String = std::string;
    String* strings = static_cast<String*>(data_);
    for (int64_t i = 0; i < num_objects_; ++i) strings[i].~String();
  }
  allocator_->Deallocate(data_, bytes_);
}

void CopyElements(DType dtype, const void* src, void* dst, int64_t count) {
  if (count <= 0) return;
  if (dtype == DType::kString) {
    std::copy_n(static_cast<const std::string*>(src), count, static_cast<std::string*>(dst));
  } else if (dtype == DType::kVariant) {
    // Copies share each element's object, which is immutable while shared.
    std::copy_n(static_cast<const Variant*>(src), count, static_cast<Variant*>(dst));
  } else {
    std::memcpy(dst, src, static_cast<size_t>(count) * DTypeSize(dtype));
  }
}

Tensor::Tensor(const Tensor& other)
    : dtype_(other.dtype_),
      shape_(other.shape_),
      num_elements_(other.num_elements_),
      buffer_(other.buffer_) {
  if (buffer_) buffer_->Ref();
}

Tensor::Tensor(Tensor&& other) noexcept
    : dtype_(other.dtype_),
      shape_(std::move(other.shape_)),
      num_elements_(other.num_elements_),
      buffer_(other.buffer_) {
  other.buffer_ = nullptr;
  other.dtype_ = DType::kInvalid;
  other.num_elements_ = 0;
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this == &other) return *this;
  if (other.buffer_) other.buffer_->Ref();
  if (buffer_) buffer_->Unref();
  dtype_ = other.dtype_;
  shape_ = other.shape_;
  num_elements_ = other.num_elements_;
  buffer_ = other.buffer_;
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  if (buffer_) buffer_->Unref();
  dtype_ = other.dtype_;
  shape_ = std::move(other.shape_);
  num_elements_ = other.num_elements_;
  buffer_ = other.buffer_;
  other.buffer_ = nullptr;
  other.dtype_ = DType::kInvalid;
  other.num_elements_ = 0;
  return *this;
}

Tensor::~Tensor() {
  if (buffer_) buffer_->Unref();
}

Status Tensor::Allocate(Allocator* allocator, DType dtype, const TensorShape& shape, Tensor* out) {
  int64_t n = 1;
  for (int64_t d : shape.dims()) {
    if (d < 0) return errors::InvalidArgument("negative dimension in ", shape.ToString());
    if (d > 0 && n > (int64_t{1} << 62) / d) return errors::ResourceExhausted("");
    n *= d;
  }
  size_t elem = DTypeSize(dtype);
  if (n > 0 && static_cast<uint64_t>(n) > (uint64_t{1} << 62) / elem) {
    return errors::ResourceExhausted("");
  }
  // Empty tensors still get a (small) buffer so that their data pointer is valid.
  size_t bytes = std::max<size_t>(static_cast<size_t>(n) * elem, 1);
  void* data = allocator->Allocate(bytes);
  if (data == nullptr) return errors::ResourceExhausted("");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = n;
  t.buffer_ = new Buffer(allocator, data, bytes, allocator->Keepalive());
  // Allocators align to at least 16 bytes, enough for a Variant or a std::string.
  if (dtype == DType::kVariant) {
    for (int64_t i = 0; i < n; ++i) new (static_cast<Variant*>(data) + i) Variant();
    t.buffer_->HoldObjects(dtype, n);
  } else if (dtype == DType::kString) {
    for (int64_t i = 0; i < n; ++i) new (static_cast<std::string*>(data) + i) std::string();
    t.buffer_->HoldObjects(dtype, n);
  }
  *out = std::move(t);
  return Status::OK();
}

Tensor Tensor::Host(DType dtype, const TensorShape& shape) {
  Tensor t;
  Status s = Allocate(CpuAllocator(), dtype, shape, &t);
  if (!s.ok()) {
    std::fprintf(stderr, "flowstone: out of host memory allocating %s\n", shape.ToString().c_str());
    std::abort();
  }
  return t;
}

Tensor Tensor::Reshaped(const TensorShape& shape) const {
  Tensor t(*this);
  t.shape_ = shape;
  return t;
}

namespace {
// The allocator of a SubSlice's buffer: its memory belongs to the sliced buffer, which the slice
// holds a reference to (its keepalive), so there is nothing to free.
class SliceAllocator final : public Allocator {
 public:
  std::string name() const override { return "slice"; }
  void* Allocate(size_t) override { return nullptr; }
  void Deallocate(void*, size_t) override {}
  AllocatorStats stats() const override { return {}; }
  int64_t limit() const override { return 0; }
};
}  // namespace

Tensor Tensor::SubSlice(int64_t index) const {
  static SliceAllocator* const slices = new SliceAllocator;
  Dims dims = shape_.dims();
  const int64_t rows = dims[0];
  dims.erase(0);
  Tensor t;
  t.dtype_ = dtype_;
  t.shape_ = TensorShape(dims);
  t.num_elements_ = rows == 0 ? 0 : num_elements_ / rows;
  const size_t row_bytes = static_cast<size_t>(t.num_elements_) * DTypeSize(dtype_);
  buffer_->Ref();
  std::shared_ptr<void> keep(buffer_, [](void* b) { static_cast<Buffer*>(b)->Unref(); });
  t.buffer_ = new Buffer(slices, static_cast<char*>(buffer_->data()) + index * row_bytes, row_bytes,
                         std::move(keep));
  return t;
}

Tensor Tensor::Copy() const {
  if (!initialized()) return Tensor();
  Tensor t = Host(dtype_, shape_);
  CopyElements(dtype_, raw_data(), t.raw_data(), num_elements_);
  return t;
}

double Tensor::ElementAsDouble(int64_t i) const {
  switch (dtype_) {
    case DType::kFloat32:
      return data<float>()[i];
    case DType::kFloat64:
      return data<double>()[i];
    case DType::kInt32:
      return data<int32_t>()[i];
    case DType::kInt64:
      return static_cast<double>(data<int64_t>()[i]);
    case DType::kUInt8:
      return data<uint8_t>()[i];
    case DType::kBool:
      return data<bool>()[i] ? 1.0 : 0.0;
    case DType::kFloat16:
      return static_cast<float>(data<Half>()[i]);
    case DType::kBFloat16:
      return static_cast<float>(data<BFloat16>()[i]);
    case DType::kComplex64:  // the real part, as a complex-to-real cast takes it
      return data<complex64>()[i].real();
    case DType::kComplex128:
      return data<complex128>()[i].real();
    default:
      return 0.0;
  }
}

int64_t Tensor::ElementAsInt64(int64_t i) const {
  switch (dtype_) {
    case DType::kInt32:
      return data<int32_t>()[i];
    case DType::kInt64:
      return data<int64_t>()[i];
    case DType::kUInt8:
      return data<uint8_t>()[i];
    case DType::kBool:
      return data<bool>()[i] ? 1 : 0;
    default:
      return static_cast<int64_t>(ElementAsDouble(i));
  }
}

std::string Tensor::DebugString() const {
  return StrCat("Tensor<", DTypeName(dtype_), ", ", shape_.ToString(), ">");
}

namespace {

// TensorFlow's shortest round-tripping rendering: 6 (float) or 15 (double) significant digits,
// more only when needed to read the same value back.
template <typename T>
std::string FormatFloat(T value, int digits, int max_digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*g", digits, static_cast<double>(value));
  if (std::isfinite(value) && static_cast<T>(std::strtod(buffer, nullptr)) != value) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", max_digits, static_cast<double>(value));
  }
  return buffer;
}

// C-style escapes for the non-printable bytes, as TensorFlow prints string elements; with
// `keep_utf8`, bytes from 0x80 up stay as they are (tf.print's UTF-8-safe form).
std::string EscapeBytes(const std::string& bytes, bool keep_utf8 = false) {
  std::string out;
  for (unsigned char c : bytes) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\"':
        out += "\\\"";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || (c >= 0x7f && !(keep_utf8 && c >= 0x80))) {
          char octal[5];
          std::snprintf(octal, sizeof(octal), "\\%03o", c);
          out += octal;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// Python's form of a complex number: "(1+2j)".
template <typename T>
std::string FormatComplex(std::complex<T> value, int digits, int max_digits) {
  const std::string imag = FormatFloat(value.imag(), digits, max_digits);
  const bool signed_imag = imag[0] == '-' || imag[0] == '+';
  return "(" + FormatFloat(value.real(), digits, max_digits) + (signed_imag ? "" : "+") + imag +
         "j)";
}

std::string FormatElement(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kComplex64:
      return FormatComplex(t.data<complex64>()[i], 6, 9);
    case DType::kComplex128:
      return FormatComplex(t.data<complex128>()[i], 15, 17);
    case DType::kFloat32:
      return FormatFloat(t.data<float>()[i], 6, 9);
    case DType::kFloat64:
      return FormatFloat(t.data<double>()[i], 15, 17);
    case DType::kFloat16:
    case DType::kBFloat16:
      return FormatFloat(static_cast<float>(t.ElementAsDouble(i)), 6, 9);
    case DType::kVariant: {
      const VariantValue* value = t.data<Variant>()[i].value();
      return value ? value->DebugString() : "<empty variant>";
    }
    case DType::kResource:
      return "<resource>";
    case DType::kString:
      return EscapeBytes(t.data<std::string>()[i]);
    default:
      return std::to_string(t.ElementAsInt64(i));
  }
}

// Appends the elements of dimension `dim` onward, stopping after `limit` elements in all.
void SummarizeDim(const Tensor& t, int dim, int64_t limit, int64_t* index, std::string* out) {
  if (*index >= limit) return;
  const int64_t count = t.dim(dim);
  if (dim == t.rank() - 1) {
    for (int64_t i = 0; i < count; ++i) {
      if (*index >= limit) {
        if (dim != 0) *out += "...";
        return;
      }
      if (i > 0) *out += " ";
      *out += FormatElement(t, (*index)++);
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const bool opened = *index < limit;
    if (opened) *out += "[";
    SummarizeDim(t, dim + 1, limit, index, out);
    if (*index < limit || opened) *out += "]";
  }
}

// Between two entries of dimension `dim`: a space in the last dimension, else a line break per
// dimension below and an indent (tf.print's layout).
void AppendSpacing(int dim, int rank, std::string* out) {
  if (dim == rank - 1) {
    *out += " ";
    return;
  }
  out->append(static_cast<size_t>(rank - dim - 1), '\n');
  out->append(static_cast<size_t>(dim + 1), ' ');
}

// tf.print's layout: the first and last `ends` entries of each dimension around "...";
// strings are quoted.
void SummarizeDimV2(const Tensor& t, int dim, int64_t ends, int64_t offset, std::string* out) {
  if (dim == t.rank()) {
    if (t.dtype() == DType::kString) {
      *out += "\"" + EscapeBytes(t.data<std::string>()[offset], /*keep_utf8=*/true) + "\"";
    } else {
      *out += FormatElement(t, offset);
    }
    return;
  }
  *out += "[";
  const int64_t count = t.dim(dim);
  int64_t stride = 1;
  for (int d = dim + 1; d < t.rank(); ++d) stride *= t.dim(d);
  const int64_t start_of_end = std::max(ends, count - ends);
  for (int64_t i = 0; i < ends && i < count; ++i) {
    if (i > 0) AppendSpacing(dim, t.rank(), out);
    SummarizeDimV2(t, dim + 1, ends, offset + stride * i, out);
  }
  if (count - ends > ends) {  // count > 2 * ends, without overflowing for a huge summarize
    AppendSpacing(dim, t.rank(), out);
    *out += "...";
  }
  for (int64_t i = start_of_end; i < count; ++i) {
    AppendSpacing(dim, t.rank(), out);
    SummarizeDimV2(t, dim + 1, ends, offset + stride * i, out);
  }
  *out += "]";
}

}  // namespace

std::string Tensor::SummarizeValue(int64_t max_entries, bool print_v2) const {
  if (!initialized()) return "uninitialized Tensor";
  if (print_v2) {
    std::string out;
    SummarizeDimV2(*this, 0, max_entries < 0 ? num_elements_ : max_entries, 0, &out);
    return out;
  }
  const int64_t limit = max_entries < 0 ? num_elements_ : std::min(max_entries, num_elements_);
  std::string out;
  if (rank() == 0) {
    if (limit > 0) out = FormatElement(*this, 0);
  } else {
    int64_t index = 0;
    SummarizeDim(*this, 0, limit, &index, &out);
  }
  if (num_elements_ > limit) out += "...";
  return out;
}

}  // namespace flowstone
