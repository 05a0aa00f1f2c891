// StringNGrams (tf.strings.ngrams: the n-grams of each row of a ragged tensor of tokens, with
// optional padding), StringToHashBucket (tf.strings.to_hash_bucket: TensorFlow's legacy Hash64)
// and StringToHashBucketStrong (tf.strings.to_hash_bucket_strong: SipHash-2-4 keyed by two 64-bit
// words), the hashes modulo a bucket count, TensorFlow's values exactly. None is
// differentiable.
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

// --- StringNGrams -----------------------------------------------------------------------------

struct NGramConfig {
  std::string separator, left_pad, right_pad;
  std::vector<int64_t> widths;
  int64_t pad_width = -1;
  bool preserve_short = false;

  // The padding on each side of an n-gram of `width`: pad_width, or width - 1 when it is -1, and
  // never more than width - 1.
  int64_t PadFor(int64_t width) const {
    return std::min(pad_width < 0 ? width - 1 : pad_width, width - 1);
  }
  // The number of n-grams of `width` over `length` tokens; false when the padded sequence is
  // longer than int64 (a width near 2^62 with its default padding).
  bool CountFor(int64_t length, int64_t width, int64_t* count) const {
    int64_t padded;
    if (__builtin_mul_overflow(PadFor(width), 2, &padded) ||
        __builtin_add_overflow(padded, length, &padded)) {
      return false;
    }
    *count = std::max<int64_t>(0, padded - width + 1);
    return true;
  }

  // Appends the `count` n-grams of `width` over tokens[0, length) to `out`.
  void Make(const std::string* tokens, int64_t count, int64_t width, std::string* out) const {
    const int64_t pad = PadFor(width);
    for (int64_t k = 0; k < count; ++k) {
      const int64_t left = std::max<int64_t>(0, pad - k);
      const int64_t right = std::max<int64_t>(0, pad - (count - (k + 1)));
      const int64_t taken = width - (left + right);
      const int64_t first = left > 0 ? 0 : k - pad;
      std::string& gram = out[k];
      for (int64_t n = 0; n < left; ++n) gram.append(left_pad).append(separator);
      for (int64_t n = 0; n + 1 < taken; ++n) gram.append(tokens[first + n]).append(separator);
      if (taken > 0) {
        // The gram ends with its last token or a right pad, never with a separator.
        gram.append(tokens[first + taken - 1]);
        for (int64_t n = 0; n < right; ++n) gram.append(separator).append(right_pad);
      } else {
        for (int64_t n = 0; n + 1 < right; ++n) gram.append(right_pad).append(separator);
        gram.append(right_pad);
      }
    }
  }
};

class StringNGramsKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override {
    const AttrMap& attrs = node().attrs();
    FS_RETURN_IF_ERROR(attrs.Get("separator", &config_.separator));
    FS_RETURN_IF_ERROR(attrs.Get("left_pad", &config_.left_pad));
    FS_RETURN_IF_ERROR(attrs.Get("right_pad", &config_.right_pad));
    FS_RETURN_IF_ERROR(attrs.Get("ngram_widths", &config_.widths));
    FS_RETURN_IF_ERROR(attrs.Get("pad_width", &config_.pad_width));
    FS_RETURN_IF_ERROR(attrs.Get("preserve_short_sequences", &config_.preserve_short));
    for (int64_t width : config_.widths) {
      if (width < 1) {
        return errors::InvalidArgument("StringNGrams: ngram_widths must be positive, got ", width);
      }
    }
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const Tensor& data = ctx.input(0);
    const Tensor& splits_tensor = ctx.input(1);
    if (data.rank() != 1 || splits_tensor.rank() != 1) {
      return errors::InvalidArgument(
          "StringNGrams: data and data_splits must be vectors, got "
          "shapes ",
          data.shape().ToString(), " and ", splits_tensor.shape().ToString());
    }
    std::vector<int64_t> splits = array_util::IntValues(splits_tensor);
    if (splits.empty()) splits.push_back(0);
    if (splits.front() != 0 || splits.back() != data.num_elements() ||
        !std::is_sorted(splits.begin(), splits.end())) {
      return errors::InvalidArgument(
          "StringNGrams: data_splits must start at 0, not decrease and "
          "end at the number of tokens (",
          data.num_elements(), "), got [", array_util::JoinInts(splits), "]");
    }
    const int64_t rows = static_cast<int64_t>(splits.size()) - 1;
    std::vector<int64_t> out_splits(rows + 1, 0);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t length = splits[r + 1] - splits[r];
      int64_t count = 0;
      for (int64_t width : config_.widths) {
        int64_t grams;
        if (!config_.CountFor(length, width, &grams) ||
            __builtin_add_overflow(count, grams, &count)) {
          return TooLong(length, width);
        }
      }
      if (config_.preserve_short && length > 0 && count == 0) count = 1;
      if (__builtin_add_overflow(out_splits[r], count, &out_splits[r + 1])) {
        return TooLong(length, config_.widths.empty() ? 0 : config_.widths.back());
      }
    }
    Tensor *grams, *grams_splits;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{out_splits.back()}, &grams));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{rows + 1}, &grams_splits));
    const std::string* tokens = data.data<std::string>();
    std::string* out = grams->data<std::string>();
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t length = splits[r + 1] - splits[r];
      int64_t at = out_splits[r];
      for (int64_t width : config_.widths) {
        int64_t count = 0;
        config_.CountFor(length, width, &count);  // Checked above.
        config_.Make(tokens + splits[r], count, width, out + at);
        at += count;
      }
      // A sequence too short for every width, kept whole (with its padding) as one n-gram.
      if (config_.preserve_short && at == out_splits[r] && length > 0) {
        config_.Make(tokens + splits[r], 1, length + 2 * config_.pad_width, out + at);
      }
    }
    for (int64_t r = 0; r <= rows; ++r) {
      if (grams_splits->dtype() == DType::kInt32) {
        grams_splits->data<int32_t>()[r] = static_cast<int32_t>(out_splits[r]);
      } else {
        grams_splits->data<int64_t>()[r] = out_splits[r];
      }
    }
    return Status::OK();
  }

 private:
  Status TooLong(int64_t length, int64_t width) const {
    return errors::InvalidArgument("StringNGrams: the n-grams of a sequence of ", length,
                                   " tokens do not fit int64 (width ", width, ", pad_width ",
                                   config_.pad_width, "); use smaller ngram_widths or pad_width");
  }
  NGramConfig config_;
};

FS_REGISTER_OP(OpBuilder("StringNGrams")
                   .Input("data", "string")
                   .Input("data_splits", "Tsplits")
                   .Output("ngrams", "string")
                   .Output("ngrams_splits", "Tsplits")
                   .RequiredAttr("separator", AttrType::kString)
                   .RequiredAttr("ngram_widths", AttrType::kIntList)
                   .RequiredAttr("left_pad", AttrType::kString)
                   .RequiredAttr("right_pad", AttrType::kString)
                   .RequiredAttr("pad_width", AttrType::kInt)
                   .RequiredAttr("preserve_short_sequences", AttrType::kBool)
                   .TypeAttr("Tsplits", array_util::kIndexTypes, DType::kInt64)
                   .Shape([](InferenceContext& ctx) {
                     ctx.set_output(0, PartialShape({-1}));
                     ctx.set_output(1, ctx.input(1));
                     return Status::OK();
                   })
                   .KernelClass<StringNGramsKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("The n-grams of each row of a ragged tensor of strings (data and "
                        "data_splits), joined by separator, padded as pad_width says."));

// --- StringToHashBucket ------------------------------------------------------------------------

// The first n (<= 8) bytes at p as a little-endian word.
uint64_t LittleEndianWord(const unsigned char* p, size_t n) {
  uint64_t word = 0;
  for (size_t i = 0; i < n; ++i) word |= static_cast<uint64_t>(p[i]) << (8 * i);
  return word;
}

// TensorFlow's legacy Hash64 (tensorflow/core/lib/hash): MurmurHash64A over little-endian words
// with the seed 0xDECAFCAFFE. tf.strings.to_hash_bucket's buckets depend on it exactly.
uint64_t LegacyHash64(std::string_view s) {
  constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;
  constexpr int kShift = 47;
  const auto* bytes = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  uint64_t h = 0xDECAFCAFFEULL ^ (n * kMul);
  for (; n >= 8; n -= 8, bytes += 8) {
    uint64_t k = LittleEndianWord(bytes, 8);
    k *= kMul;
    k ^= k >> kShift;
    k *= kMul;
    h ^= k;
    h *= kMul;
  }
  if (n > 0) {
    h ^= LittleEndianWord(bytes, n);
    h *= kMul;
  }
  h ^= h >> kShift;
  h *= kMul;
  h ^= h >> kShift;
  return h;
}

Status StringToHashBucketKernel(KernelContext& ctx) {
  const int64_t num_buckets = ctx.attrs().GetOr<int64_t>("num_buckets", 0);
  if (num_buckets <= 0) {
    return errors::InvalidArgument("StringToHashBucket: num_buckets must be positive, got ",
                                   num_buckets);
  }
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    out->data<int64_t>()[i] = static_cast<int64_t>(LegacyHash64(in.data<std::string>()[i]) %
                                                   static_cast<uint64_t>(num_buckets));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StringToHashBucket")
                   .Input("string_tensor", "string")
                   .Output("output", "int64")
                   .RequiredAttr("num_buckets", AttrType::kInt)
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", StringToHashBucketKernel)
                   .NotDifferentiable()
                   .Doc("Each string's legacy TensorFlow Hash64 modulo `num_buckets` "
                        "(tf.strings.to_hash_bucket; TensorFlow's values)."));

// --- StringToHashBucketStrong -------------------------------------------------------------------

uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

void SipRound(uint64_t v[4]) {
  v[0] += v[1];
  v[1] = Rotl(v[1], 13) ^ v[0];
  v[0] = Rotl(v[0], 32);
  v[2] += v[3];
  v[3] = Rotl(v[3], 16) ^ v[2];
  v[0] += v[3];
  v[3] = Rotl(v[3], 21) ^ v[0];
  v[2] += v[1];
  v[1] = Rotl(v[1], 17) ^ v[2];
  v[2] = Rotl(v[2], 32);
}

// SipHash-2-4 of `s` under the 128-bit key (k0, k1).
uint64_t SipHash24(uint64_t k0, uint64_t k1, std::string_view s) {
  uint64_t v[4] = {k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
                   k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL};
  const auto* bytes = reinterpret_cast<const unsigned char*>(s.data());
  const size_t whole = s.size() / 8 * 8;
  auto absorb = [&](uint64_t m) {
    v[3] ^= m;
    SipRound(v);
    SipRound(v);
    v[0] ^= m;
  };
  for (size_t i = 0; i < whole; i += 8) absorb(LittleEndianWord(bytes + i, 8));
  absorb((static_cast<uint64_t>(s.size()) << 56) |
         LittleEndianWord(bytes + whole, s.size() - whole));
  v[2] ^= 0xff;
  for (int i = 0; i < 4; ++i) SipRound(v);
  return v[0] ^ v[1] ^ v[2] ^ v[3];
}

Status StringToHashBucketStrongKernel(KernelContext& ctx) {
  const int64_t num_buckets = ctx.attrs().GetOr<int64_t>("num_buckets", 0);
  const std::vector<int64_t> key = ctx.attrs().GetOr<std::vector<int64_t>>("key", {});
  if (num_buckets <= 0) {
    return errors::InvalidArgument("StringToHashBucketStrong: num_buckets must be positive, got ",
                                   num_buckets);
  }
  if (key.size() != 2) {
    return errors::InvalidArgument("StringToHashBucketStrong: key must have 2 elements, got ",
                                   key.size());
  }
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  const std::string* src = in.data<std::string>();
  int64_t* dst = out->data<int64_t>();
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    const uint64_t hash =
        SipHash24(static_cast<uint64_t>(key[0]), static_cast<uint64_t>(key[1]), src[i]);
    dst[i] = static_cast<int64_t>(hash % static_cast<uint64_t>(num_buckets));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StringToHashBucketStrong")
                   .Input("input", "string")
                   .Output("output", "int64")
                   .RequiredAttr("num_buckets", AttrType::kInt)
                   .RequiredAttr("key", AttrType::kIntList)
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", StringToHashBucketStrongKernel)
                   .NotDifferentiable()
                   .Doc("Each string's SipHash-2-4 under the 128-bit `key` modulo `num_buckets` "
                        "(TensorFlow's values)."));

}  // namespace
}  // namespace flowstone
