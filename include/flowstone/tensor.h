// Tensor: a dtype, a shape and a reference-counted buffer. Copying a Tensor shares its buffer.
//
// A string tensor's buffer is an array of std::string (DTypeOf<std::string>), constructed empty
// by Allocate and destroyed with the buffer; kernels read and assign elements through
// data<std::string>() and copy them with CopyElements. Like variants, strings live in host
// memory whatever the device.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "flowstone/allocator.h"
#include "flowstone/shape.h"
#include "flowstone/status.h"
#include "flowstone/types.h"
#include "flowstone/variant.h"

namespace flowstone {

// A block of memory owned by an allocator, freed when the last reference goes. Allocators are
// never destroyed before their buffers (the CPU allocator lives for the process; a limited
// allocator is kept alive by the buffers through `keepalive`).
class Buffer {
 public:
  Buffer(Allocator* allocator, void* data, size_t bytes, std::shared_ptr<void> keepalive = {})
      : allocator_(allocator), data_(data), bytes_(bytes), keepalive_(std::move(keepalive)) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  bool RefCountIsOne() const { return refs_.load(std::memory_order_acquire) == 1; }
  // The buffer holds `count` constructed objects of `dtype` (a string or variant tensor's
  // elements, see HoldsObjects), destroyed with it.
  void HoldObjects(DType dtype, int64_t count) {
    object_dtype_ = dtype;
    num_objects_ = count;
  }

 private:
  Allocator* allocator_;
  void* data_;
  size_t bytes_;
  std::shared_ptr<void> keepalive_;
  std::atomic<int32_t> refs_{1};
  DType object_dtype_ = DType::kInvalid;
  int64_t num_objects_ = 0;
};

// Copies `count` elements of `dtype` from `src` to `dst` (both holding constructed elements):
// a memcpy for plain dtypes, element assignment for strings and variants. Kernels that move
// elements of any dtype copy through this, never with memcpy of a string tensor's bytes.
void CopyElements(DType dtype, const void* src, void* dst, int64_t count);
// The same, with the count given in bytes (a multiple of DTypeSize(dtype)), for kernels that
// reason in rows of bytes.
inline void CopyElementBytes(DType dtype, const void* src, void* dst, size_t bytes) {
  CopyElements(dtype, src, dst, static_cast<int64_t>(bytes / DTypeSize(dtype)));
}

class Tensor {
 public:
  Tensor() = default;
  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  // Allocates an uninitialized tensor. Fails with an empty status message on OOM; callers that
  // know the device (kernels, sessions) turn that into the full OOM report.
  static Status Allocate(Allocator* allocator, DType dtype, const TensorShape& shape, Tensor* out);
  // Allocates on the CPU allocator and aborts on OOM; for tests and small host-side values.
  static Tensor Host(DType dtype, const TensorShape& shape);
  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t = Host(DTypeOf<T>::value, TensorShape{});
    *t.data<T>() = value;
    return t;
  }
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const TensorShape& shape) {
    Tensor t = Host(DTypeOf<T>::value, shape);
    for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
    return t;
  }

  bool initialized() const { return dtype_ != DType::kInvalid; }
  DType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t num_elements() const { return num_elements_; }
  size_t bytes() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }
  Buffer* buffer() const { return buffer_; }

  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }
  // True when no other tensor shares the buffer, so a kernel may overwrite it in place.
  bool RefCountIsOne() const { return buffer_ && buffer_->RefCountIsOne(); }

  // A tensor sharing this buffer with another shape of the same element count.
  Tensor Reshaped(const TensorShape& shape) const;
  // Row `index` along the first dimension (of a plain dtype, not strings or variants), sharing
  // this tensor's memory and keeping it alive: what is written into the row lands in this
  // tensor. The row is aligned only as far as its offset allows (see kTensorAlignment).
  Tensor SubSlice(int64_t index) const;
  // A deep copy on the CPU allocator.
  Tensor Copy() const;
  // Element i converted to double/int64, whatever the dtype (for shape arguments and messages).
  double ElementAsDouble(int64_t i) const;
  int64_t ElementAsInt64(int64_t i) const;
  // A short summary, "Tensor<float32, [2,3]>".
  std::string DebugString() const;
  // The first `max_entries` values (all when negative) as TensorFlow prints them in tf.Print and
  // assertion messages: "[1.5 2 3][4...]..." for a [2,3] tensor and 4 entries. With `print_v2`,
  // as tf.print does: numpy-like nesting, and the first and last `max_entries` entries of each
  // dimension ("[0 1 2 ... 7 8 9]").
  std::string SummarizeValue(int64_t max_entries, bool print_v2 = false) const;

 private:
  DType dtype_ = DType::kInvalid;
  TensorShape shape_;
  int64_t num_elements_ = 0;
  Buffer* buffer_ = nullptr;
};

}  // namespace flowstone
