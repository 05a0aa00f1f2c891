#include "flowstone/shape.h"

#include <algorithm>
#include <limits>

namespace flowstone {

Dims::Dims(std::initializer_list<int64_t> dims) {
  Reserve(static_cast<int>(dims.size()));
  for (int64_t d : dims) data()[size_++] = d;
}

Dims::Dims(const std::vector<int64_t>& dims) : Dims(dims.data(), static_cast<int>(dims.size())) {}

Dims::Dims(const int64_t* dims, int rank) {
  Reserve(rank);
  std::copy(dims, dims + rank, data());
  size_ = rank;
}

void Dims::CopySlow(const Dims& other) {
  size_ = 0;
  Reserve(other.size_);
  std::copy(other.begin(), other.end(), data());
  size_ = other.size_;
}

void Dims::Reserve(int capacity) {
  if (capacity <= capacity_) return;
  int new_capacity = std::max(capacity, capacity_ * 2);
  int64_t* fresh = new int64_t[new_capacity];
  std::copy(begin(), end(), fresh);
  delete[] heap_;
  heap_ = fresh;
  capacity_ = new_capacity;
}

void Dims::push_back(int64_t d) {
  Reserve(size_ + 1);
  data()[size_++] = d;
}

void Dims::resize(int n, int64_t fill) {
  Reserve(n);
  for (int i = size_; i < n; ++i) data()[i] = fill;
  size_ = n;
}

void Dims::insert(int pos, int64_t d) {
  Reserve(size_ + 1);
  int64_t* p = data();
  for (int i = size_; i > pos; --i) p[i] = p[i - 1];
  p[pos] = d;
  ++size_;
}

void Dims::erase(int pos) {
  int64_t* p = data();
  for (int i = pos; i + 1 < size_; ++i) p[i] = p[i + 1];
  --size_;
}

namespace {
// The product of non-negative dims, saturated at INT64_MAX: shapes whose element count does not
// fit in int64 (from huge multiples, num_segments or sizes) exist until an allocation refuses
// them, and heuristics and error messages ask for their size meanwhile.
int64_t SaturatedProduct(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d == 0) return 0;
  }
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  }
  return n;
}
}  // namespace

int64_t TensorShape::num_elements() const { return SaturatedProduct(dims_); }

namespace {
std::string JoinDims(const Dims& dims, const char* sep, const char* unknown) {
  std::string out;
  for (int i = 0; i < dims.size(); ++i) {
    if (i > 0) out += sep;
    out += dims[i] < 0 ? std::string(unknown) : std::to_string(dims[i]);
  }
  return out;
}
}  // namespace

std::string TensorShape::ToString() const { return "[" + JoinDims(dims_, ",", "?") + "]"; }

std::string TensorShape::ToPythonString() const {
  if (dims_.size() == 1) return "(" + std::to_string(dims_[0]) + ",)";
  return "(" + JoinDims(dims_, ", ", "?") + ")";
}

Status ValidateDims(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return errors::InvalidArgument("Dimension ", d, " must be >= 0");
    if (d > 0 && n > std::numeric_limits<int64_t>::max() / d) {
      return errors::InvalidArgument("Shape has too many elements to fit in int64");
    }
    n *= d;
  }
  return Status::OK();
}

PartialShape PartialShape::UnknownOfRank(int rank) {
  PartialShape s;
  s.known_rank_ = true;
  s.dims_.resize(rank, kUnknownDim);
  return s;
}

PartialShape::PartialShape(std::initializer_list<int64_t> dims) : known_rank_(true), dims_(dims) {
  for (int i = 0; i < dims_.size(); ++i) dims_[i] = std::max<int64_t>(dims_[i], kUnknownDim);
}

PartialShape::PartialShape(const std::vector<int64_t>& dims) : known_rank_(true), dims_(dims) {
  for (int i = 0; i < dims_.size(); ++i) dims_[i] = std::max<int64_t>(dims_[i], kUnknownDim);
}

PartialShape::PartialShape(const TensorShape& shape) : known_rank_(true), dims_(shape.dims()) {}

PartialShape::PartialShape(const Dims& dims) : known_rank_(true), dims_(dims) {}

bool PartialShape::IsFullyDefined() const {
  if (!known_rank_) return false;
  for (int64_t d : dims_)
    if (d < 0) return false;
  return true;
}

int64_t PartialShape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  return SaturatedProduct(dims_);
}

bool PartialShape::IsCompatibleWith(const PartialShape& other) const {
  if (!known_rank_ || !other.known_rank_) return true;
  if (dims_.size() != other.dims_.size()) return false;
  for (int i = 0; i < dims_.size(); ++i) {
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

bool PartialShape::IsCompatibleWith(const TensorShape& shape) const {
  return IsCompatibleWith(PartialShape(shape));
}

Status PartialShape::Merge(const PartialShape& other, PartialShape* out) const {
  if (!known_rank_) {
    *out = other;
    return Status::OK();
  }
  if (!other.known_rank_) {
    *out = *this;
    return Status::OK();
  }
  if (!IsCompatibleWith(other)) {
    return errors::InvalidArgument("Shapes ", ToString(), " and ", other.ToString(),
                                   " are not compatible");
  }
  PartialShape merged = *this;
  for (int i = 0; i < dims_.size(); ++i) {
    if (merged.dims_[i] < 0) merged.dims_[i] = other.dims_[i];
  }
  *out = merged;
  return Status::OK();
}

bool PartialShape::operator==(const PartialShape& other) const {
  return known_rank_ == other.known_rank_ && dims_ == other.dims_;
}

std::string PartialShape::ToString() const {
  if (!known_rank_) return "<unknown>";
  return "[" + JoinDims(dims_, ",", "?") + "]";
}

std::string PartialShape::ToPythonString() const {
  if (!known_rank_) return "<unknown>";
  if (dims_.size() == 1) return "(" + JoinDims(dims_, "", "?") + ",)";
  return "(" + JoinDims(dims_, ", ", "?") + ")";
}

}  // namespace flowstone
