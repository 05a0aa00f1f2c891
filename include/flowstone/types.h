// Element types and the fixed-size scalar types Flowstone stores.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace flowstone {

// Element types. Float16 and BFloat16 are storage types: they can be held, fed, fetched and cast,
// while arithmetic kernels run on float32/float64/int32/int64. kResource is a handle to
// session-owned state (a variable); users never see it as a numeric type. kVariant holds a
// refcounted C++ object per element (a TensorList; see variant.h): host memory only, never
// converted to numbers, fed or fetched. kString holds a byte string (std::string) per element:
// host memory only, constructed and destroyed with its buffer (see Buffer in tensor.h).
// kComplex64 and kComplex128 hold std::complex<float> and std::complex<double> (a real and an
// imaginary part, as numpy and TensorFlow lay them out).
enum class DType : uint8_t {
  kInvalid = 0,
  kFloat32,
  kFloat64,
  kInt32,
  kInt64,
  kUInt8,
  kBool,
  kFloat16,
  kBFloat16,
  kResource,
  kVariant,
  kString,
  kComplex64,
  kComplex128,
};

constexpr int kNumDTypes = 14;

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

// Whether T is std::complex<float> or std::complex<double>, for kernels templated on the element.
template <typename T>
inline constexpr bool kIsComplex = false;
template <typename T>
inline constexpr bool kIsComplex<std::complex<T>> = true;

// Bytes per element (0 for kInvalid).
size_t DTypeSize(DType dtype);
// Python-facing name: "float32", "int64", "bool", ...
const char* DTypeName(DType dtype);
// TensorFlow's short name used in its messages: "float", "double", "int32", "half", ...
const char* DTypeShortName(DType dtype);
// TensorFlow's DataType enum number (DT_FLOAT = 1, ...), for protos and compatibility.
int DTypeToTfEnum(DType dtype);
bool DTypeFromName(const std::string& name, DType* out);
bool IsFloating(DType dtype);
bool IsInteger(DType dtype);
bool IsComplex(DType dtype);
// float32 for complex64, float64 for complex128, else the dtype itself.
DType RealPartType(DType dtype);
// Whether elements are C++ objects (strings, variants) that must be constructed, copied by
// assignment and destroyed, rather than plain bytes a kernel may memcpy.
inline bool HoldsObjects(DType dtype) {
  return dtype == DType::kString || dtype == DType::kVariant;
}

// IEEE half precision, storage only.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float value);
  explicit operator float() const;
};

// bfloat16: the top half of a float32, storage only (round to nearest even).
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value);
  explicit operator float() const;
};

// Maps a C++ type to its DType.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::kBFloat16;
};
template <>
struct DTypeOf<complex64> {
  static constexpr DType value = DType::kComplex64;
};
template <>
struct DTypeOf<complex128> {
  static constexpr DType value = DType::kComplex128;
};
template <>
struct DTypeOf<std::string> {
  static constexpr DType value = DType::kString;
};

}  // namespace flowstone
