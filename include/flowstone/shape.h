// Shapes: TensorShape is fully known (a tensor's real shape); PartialShape may have unknown
// dimensions (-1) or an unknown rank, as graph-building shape inference needs.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "flowstone/status.h"

namespace flowstone {

// A short vector of dimensions stored inline up to kInline entries, so that the shapes of the
// tensors a run produces cost no heap allocation.
class Dims {
 public:
  static constexpr int kInline = 6;
  Dims() = default;
  Dims(std::initializer_list<int64_t> dims);
  explicit Dims(const std::vector<int64_t>& dims);
  Dims(const int64_t* dims, int rank);
  // Copies and moves of inline dims (every shape of rank kInline or less) are a fixed-size copy
  // with no call: they are on every op's path, in sessions and eager calls alike.
  Dims(const Dims& other) {
    if (other.heap_ == nullptr) {
      CopyInline(other);
    } else {
      CopySlow(other);
    }
  }
  // A move takes the heap buffer of a long shape; an inline one is copied, so the moved-from dims
  // keep their values.
  Dims(Dims&& other) noexcept {
    if (other.heap_ == nullptr) {
      CopyInline(other);
    } else {
      TakeHeap(other);
    }
  }
  Dims& operator=(const Dims& other) {
    if (this == &other) return *this;
    if (heap_ == nullptr && other.heap_ == nullptr) {
      CopyInline(other);
    } else {
      CopySlow(other);
    }
    return *this;
  }
  Dims& operator=(Dims&& other) noexcept {
    if (this == &other) return *this;
    if (heap_ == nullptr && other.heap_ == nullptr) {
      CopyInline(other);
    } else {
      delete[] heap_;
      heap_ = nullptr;
      capacity_ = kInline;
      if (other.heap_ == nullptr) {
        CopyInline(other);
      } else {
        TakeHeap(other);
      }
    }
    return *this;
  }
  ~Dims() { delete[] heap_; }

  int size() const { return size_; }
  int64_t operator[](int i) const { return data()[i]; }
  int64_t& operator[](int i) { return data()[i]; }
  const int64_t* data() const { return heap_ ? heap_ : inline_; }
  int64_t* data() { return heap_ ? heap_ : inline_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  void push_back(int64_t d);
  void resize(int n, int64_t fill = 0);
  void insert(int pos, int64_t d);
  void erase(int pos);
  std::vector<int64_t> ToVector() const { return std::vector<int64_t>(begin(), end()); }
  bool operator==(const Dims& other) const {
    if (size_ != other.size_) return false;
    const int64_t* a = data();
    const int64_t* b = other.data();
    for (int i = 0; i < size_; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  bool operator!=(const Dims& other) const { return !(*this == other); }

 private:
  void Reserve(int capacity);
  // For dims that are both inline.
  void CopyInline(const Dims& other) {
    for (int i = 0; i < kInline; ++i) inline_[i] = other.inline_[i];
    size_ = other.size_;
  }
  void CopySlow(const Dims& other);
  void TakeHeap(Dims& other) {
    heap_ = other.heap_;
    capacity_ = other.capacity_;
    size_ = other.size_;
    other.heap_ = nullptr;
    other.capacity_ = kInline;
    other.size_ = 0;
  }
  int size_ = 0;
  int capacity_ = kInline;
  int64_t* heap_ = nullptr;
  int64_t inline_[kInline] = {};
};

class TensorShape {
 public:
  TensorShape() = default;  // a scalar
  TensorShape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit TensorShape(const std::vector<int64_t>& dims) : dims_(dims) {}
  explicit TensorShape(const Dims& dims) : dims_(dims) {}

  int rank() const { return dims_.size(); }
  int64_t dim(int i) const { return dims_[i]; }
  void set_dim(int i, int64_t value) { dims_[i] = value; }
  const Dims& dims() const { return dims_; }
  Dims& mutable_dims() { return dims_; }
  void AddDim(int64_t d) { dims_.push_back(d); }
  int64_t num_elements() const;
  std::vector<int64_t> ToVector() const { return dims_.ToVector(); }
  bool operator==(const TensorShape& other) const { return dims_ == other.dims_; }
  bool operator!=(const TensorShape& other) const { return !(*this == other); }
  // "[2,3]" as TensorFlow's C++ messages write shapes.
  std::string ToString() const;
  // "(2, 3)" as numpy and Python messages write shapes.
  std::string ToPythonString() const;

 private:
  Dims dims_;
};

// Checks that dims are non-negative and that their product fits in int64.
Status ValidateDims(const std::vector<int64_t>& dims);

class PartialShape {
 public:
  static constexpr int64_t kUnknownDim = -1;

  // Unknown rank.
  PartialShape() = default;
  static PartialShape Unknown() { return PartialShape(); }
  static PartialShape UnknownOfRank(int rank);
  PartialShape(std::initializer_list<int64_t> dims);
  explicit PartialShape(const std::vector<int64_t>& dims);
  explicit PartialShape(const TensorShape& shape);
  explicit PartialShape(const Dims& dims);

  bool known_rank() const { return known_rank_; }
  int rank() const { return known_rank_ ? dims_.size() : -1; }
  int64_t dim(int i) const { return dims_[i]; }
  const Dims& dims() const { return dims_; }
  bool IsFullyDefined() const;
  // Number of elements when fully defined, -1 otherwise.
  int64_t num_elements() const;
  TensorShape ToTensorShape() const { return TensorShape(dims_); }
  std::vector<int64_t> ToVector() const { return dims_.ToVector(); }

  // True when some fully-defined shape matches both.
  bool IsCompatibleWith(const PartialShape& other) const;
  bool IsCompatibleWith(const TensorShape& shape) const;
  // The most specific shape compatible with both; fails if they are incompatible.
  Status Merge(const PartialShape& other, PartialShape* out) const;
  bool operator==(const PartialShape& other) const;
  bool operator!=(const PartialShape& other) const { return !(*this == other); }

  // "[?,3]" (TensorFlow's C++ style) and "(?, 3)" (its Python feed-error style).
  std::string ToString() const;
  std::string ToPythonString() const;

 private:
  bool known_rank_ = false;
  Dims dims_;
};

}  // namespace flowstone
