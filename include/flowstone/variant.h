// Elements of dtype variant: each holds a reference-counted C++ object (a TensorList, say).
//
// A variant tensor's buffer is an array of Variant. Copying a Variant shares its object, so an
// object is immutable while shared: a kernel that changes one first makes its Variant the only
// holder (MutableIfUnique, else a copy), which gives variant tensors value semantics while the
// last reader of a value may update it in place.
#pragma once

#include <memory>
#include <string>
#include <utility>

namespace flowstone {

// The object a Variant holds.
class VariantValue {
 public:
  virtual ~VariantValue() = default;
  // TensorFlow's type name, e.g. "tensorflow::TensorList", for messages.
  virtual std::string TypeName() const = 0;
  virtual std::string DebugString() const = 0;
  // A copy sharing nothing mutable with this one.
  virtual std::unique_ptr<VariantValue> Clone() const = 0;
};

class Variant {
 public:
  Variant() = default;
  explicit Variant(std::shared_ptr<VariantValue> value) : value_(std::move(value)) {}

  bool empty() const { return value_ == nullptr; }
  const VariantValue* value() const { return value_.get(); }
  // The held object as T, or nullptr when empty or of another type.
  template <typename T>
  const T* get() const {
    return dynamic_cast<const T*>(value_.get());
  }
  // The held object as a mutable T; when another Variant shares it, this one first takes a copy
  // of its own. nullptr when empty or of another type.
  template <typename T>
  T* GetMutable() {
    if (value_ == nullptr) return nullptr;
    if (value_.use_count() > 1) value_ = std::shared_ptr<VariantValue>(value_->Clone());
    return dynamic_cast<T*>(value_.get());
  }

 private:
  std::shared_ptr<VariantValue> value_;
};

}  // namespace flowstone
