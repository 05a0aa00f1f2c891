#include "flowstone/types.h"

#include <cmath>

#include "flowstone/variant.h"

namespace flowstone {
namespace {

struct DTypeInfo {
  DType dtype;
  size_t size;
  const char* name;
  const char* short_name;
  int tf_enum;
};

constexpr DTypeInfo kInfo[kNumDTypes] = {
    {DType::kInvalid, 0, "invalid", "invalid", 0},
    {DType::kFloat32, 4, "float32", "float", 1},
    {DType::kFloat64, 8, "float64", "double", 2},
    {DType::kInt32, 4, "int32", "int32", 3},
    {DType::kInt64, 8, "int64", "int64", 9},
    {DType::kUInt8, 1, "uint8", "uint8", 4},
    {DType::kBool, 1, "bool", "bool", 10},
    {DType::kFloat16, 2, "float16", "half", 19},
    {DType::kBFloat16, 2, "bfloat16", "bfloat16", 14},
    {DType::kResource, 8, "resource", "resource", 20},
    {DType::kVariant, sizeof(Variant), "variant", "variant", 21},
    {DType::kString, sizeof(std::string), "string", "string", 7},
    {DType::kComplex64, 8, "complex64", "complex64", 8},
    {DType::kComplex128, 16, "complex128", "complex128", 18},
};

const DTypeInfo& Info(DType dtype) {
  int index = static_cast<int>(dtype);
  return kInfo[index < kNumDTypes ? index : 0];
}

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float BitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

size_t DTypeSize(DType dtype) { return Info(dtype).size; }
const char* DTypeName(DType dtype) { return Info(dtype).name; }
const char* DTypeShortName(DType dtype) { return Info(dtype).short_name; }
int DTypeToTfEnum(DType dtype) { return Info(dtype).tf_enum; }

bool DTypeFromName(const std::string& name, DType* out) {
  for (const DTypeInfo& info : kInfo) {
    if (info.dtype != DType::kInvalid && (name == info.name || name == info.short_name)) {
      *out = info.dtype;
      return true;
    }
  }
  return false;
}

bool IsFloating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

bool IsInteger(DType dtype) {
  return dtype == DType::kInt32 || dtype == DType::kInt64 || dtype == DType::kUInt8;
}

bool IsComplex(DType dtype) { return dtype == DType::kComplex64 || dtype == DType::kComplex128; }

DType RealPartType(DType dtype) {
  if (dtype == DType::kComplex64) return DType::kFloat32;
  if (dtype == DType::kComplex128) return DType::kFloat64;
  return dtype;
}

Half::Half(float value) {
  // Round-to-nearest-even conversion from float32 to IEEE binary16.
  uint32_t f = FloatBits(value);
  uint32_t sign = (f >> 16) & 0x8000u;
  uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    bits = static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    return;
  }
  if (abs >= 0x477ff000u) {  // overflows to inf after rounding
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (abs < 0x38800000u) {                  // subnormal or zero in half
    float magic = BitsToFloat(abs) + 0.5f;  // 0.5 = 2^-1 aligns the subnormal mantissa
    bits = static_cast<uint16_t>(sign | (FloatBits(magic) - FloatBits(0.5f)));
    return;
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round
  bits = static_cast<uint16_t>(sign | (abs >> 13));
}

Half::operator float() const {
  uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {
    float value = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -value : value;
  }
  if (exp == 31) return BitsToFloat(sign | 0x7f800000u | (mant << 13));
  return BitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

BFloat16::BFloat16(float value) {
  uint32_t f = FloatBits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) {  // nan stays a quiet nan
    bits = static_cast<uint16_t>((f >> 16) | 0x40u);
    return;
  }
  uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  bits = static_cast<uint16_t>((f + rounding) >> 16);
}

BFloat16::operator float() const { return BitsToFloat(static_cast<uint32_t>(bits) << 16); }

}  // namespace flowstone
