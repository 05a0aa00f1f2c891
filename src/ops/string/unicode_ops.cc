// Unicode strings (tf.strings.unicode_*): UnicodeDecode and UnicodeDecodeWithOffsets (strings to
// a ragged tensor of code points: row_splits and values), UnicodeEncode (the inverse),
// UnicodeTranscode (one encoding to another) and UnicodeScript (ICU's script code of each code
// point). The encodings are UTF-8, UTF-16-BE and UTF-32-BE, decoded here without ICU; a bad
// sequence is one error of its maximal ill-formed prefix (Unicode's "maximal subpart" rule,
// which TensorFlow's ICU decoder follows), handled as `errors` says: "strict" fails, "replace"
// emits `replacement_char`, "ignore" drops it. None of these ops is differentiable.
#include <unicode/uscript.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

enum class Encoding { kUtf8, kUtf16Be, kUtf32Be };
enum class ErrorMode { kStrict, kReplace, kIgnore };

Status ParseEncoding(const std::string& op, const std::string& attr, const std::string& name,
                     Encoding* out) {
  std::string canonical;
  for (char c : name) {
    if (c != '-' && c != '_') canonical.push_back(static_cast<char>(std::toupper(c)));
  }
  if (canonical == "UTF8") {
    *out = Encoding::kUtf8;
  } else if (canonical == "UTF16BE") {
    *out = Encoding::kUtf16Be;
  } else if (canonical == "UTF32BE") {
    *out = Encoding::kUtf32Be;
  } else {
    return errors::InvalidArgument(op, ": ", attr, " '", name,
                                   "' is not supported; use UTF-8, UTF-16-BE or UTF-32-BE "
                                   "(Flowstone decodes no other encoding)");
  }
  return Status::OK();
}

Status ParseErrors(const std::string& op, const AttrMap& attrs, ErrorMode* out) {
  const std::string mode = attrs.GetOr<std::string>("errors", "replace");
  if (mode == "strict") {
    *out = ErrorMode::kStrict;
  } else if (mode == "replace") {
    *out = ErrorMode::kReplace;
  } else if (mode == "ignore") {
    *out = ErrorMode::kIgnore;
  } else {
    return errors::InvalidArgument(op, ": errors must be 'strict', 'replace' or 'ignore', got '",
                                   mode, "'");
  }
  return Status::OK();
}

bool IsScalarValue(int64_t c) { return c >= 0 && c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF); }

// The next code point of `s` at `*pos` (advancing it), or -1 for an ill-formed sequence, after
// which *pos is past its maximal ill-formed prefix.
int64_t NextUtf8(std::string_view s, size_t* pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte((*pos)++);
  if (lead < 0x80) return lead;
  int trail_count;
  int64_t c;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the first trail byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    trail_count = 1;
    c = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    trail_count = 2;
    c = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    trail_count = 3;
    c = lead & 0x07;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return -1;
  }
  for (int t = 0; t < trail_count; ++t) {
    if (*pos >= s.size()) return -1;
    const unsigned char b = byte(*pos);
    if (b < low || b > high) return -1;
    low = 0x80;
    high = 0xBF;
    c = (c << 6) | (b & 0x3F);
    ++*pos;
  }
  return c;
}

int64_t NextUtf16Be(std::string_view s, size_t* pos) {
  const auto unit = [&](size_t i) {
    return (static_cast<unsigned char>(s[i]) << 8) | static_cast<unsigned char>(s[i + 1]);
  };
  if (*pos + 2 > s.size()) {
    *pos = s.size();
    return -1;
  }
  const int64_t first = unit(*pos);
  *pos += 2;
  if (first < 0xD800 || first > 0xDFFF) return first;
  if (first >= 0xDC00 || *pos + 2 > s.size()) return -1;
  const int64_t second = unit(*pos);
  if (second < 0xDC00 || second > 0xDFFF) return -1;
  *pos += 2;
  return 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
}

int64_t NextUtf32Be(std::string_view s, size_t* pos) {
  if (*pos + 4 > s.size()) {
    *pos = s.size();
    return -1;
  }
  int64_t c = 0;
  for (int i = 0; i < 4; ++i) c = (c << 8) | static_cast<unsigned char>(s[*pos + i]);
  *pos += 4;
  return IsScalarValue(c) ? c : -1;
}

// How a string is decoded: the encoding, the error mode and its replacement, and whether C0
// control characters count as errors.
struct Decoder {
  Encoding encoding = Encoding::kUtf8;
  ErrorMode mode = ErrorMode::kReplace;
  int64_t replacement = 0xFFFD;
  bool replace_control = false;

  Status Init(const std::string& op, const AttrMap& attrs) {
    FS_RETURN_IF_ERROR(ParseEncoding(op, "input_encoding",
                                     attrs.GetOr<std::string>("input_encoding", ""), &encoding));
    FS_RETURN_IF_ERROR(ParseErrors(op, attrs, &mode));
    replacement = attrs.GetOr<int64_t>("replacement_char", 0xFFFD);
    replace_control = attrs.GetOr<bool>("replace_control_characters", false);
    return Status::OK();
  }

  // Calls emit(code_point, byte_start) for each character of `s`.
  template <typename F>
  Status Decode(std::string_view s, F&& emit) const {
    size_t pos = 0;
    while (pos < s.size()) {
      const size_t start = pos;
      int64_t c = encoding == Encoding::kUtf8      ? NextUtf8(s, &pos)
                  : encoding == Encoding::kUtf16Be ? NextUtf16Be(s, &pos)
                                                   : NextUtf32Be(s, &pos);
      // With replace_control_characters a C0 control is one more error (replaced, or dropped
      // under errors='ignore', as TensorFlow does).
      if (replace_control && c >= 0 && c < 0x20) c = -1;
      if (c < 0) {
        if (mode == ErrorMode::kStrict) {
          return errors::InvalidArgument("Invalid formatting on input string at byte ", start,
                                         " (errors='strict'; use errors='replace' or 'ignore' to "
                                         "decode ill-formed text)");
        }
        if (mode == ErrorMode::kIgnore) continue;
        c = replacement;
      }
      emit(c, static_cast<int64_t>(start));
    }
    return Status::OK();
  }
};

// Appends `c` to `out` in `encoding` (c a Unicode scalar value).
void AppendEncoded(int64_t c, Encoding encoding, std::string* out) {
  switch (encoding) {
    case Encoding::kUtf8:
      if (c < 0x80) {
        out->push_back(static_cast<char>(c));
      } else if (c < 0x800) {
        out->push_back(static_cast<char>(0xC0 | (c >> 6)));
        out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
      } else if (c < 0x10000) {
        out->push_back(static_cast<char>(0xE0 | (c >> 12)));
        out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
      } else {
        out->push_back(static_cast<char>(0xF0 | (c >> 18)));
        out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
      }
      return;
    case Encoding::kUtf16Be: {
      auto unit = [&](int64_t u) {
        out->push_back(static_cast<char>(u >> 8));
        out->push_back(static_cast<char>(u & 0xFF));
      };
      if (c < 0x10000) {
        unit(c);
      } else {
        unit(0xD800 + ((c - 0x10000) >> 10));
        unit(0xDC00 + ((c - 0x10000) & 0x3FF));
      }
      return;
    }
    case Encoding::kUtf32Be:
      for (int shift = 24; shift >= 0; shift -= 8) {
        out->push_back(static_cast<char>((c >> shift) & 0xFF));
      }
      return;
  }
}

// How code points are encoded: the encoding and what becomes of one that is not a scalar value.
struct Encoder {
  Encoding encoding = Encoding::kUtf8;
  ErrorMode mode = ErrorMode::kReplace;
  int64_t replacement = 0xFFFD;

  Status Init(const std::string& op, const AttrMap& attrs) {
    FS_RETURN_IF_ERROR(ParseEncoding(op, "output_encoding",
                                     attrs.GetOr<std::string>("output_encoding", ""), &encoding));
    FS_RETURN_IF_ERROR(ParseErrors(op, attrs, &mode));
    replacement = attrs.GetOr<int64_t>("replacement_char", 0xFFFD);
    if (mode == ErrorMode::kReplace && !IsScalarValue(replacement)) {
      return errors::InvalidArgument(op, ": replacement_char ", replacement,
                                     " is not a Unicode scalar value");
    }
    return Status::OK();
  }

  Status Append(int64_t c, std::string* out) const {
    if (!IsScalarValue(c)) {
      if (mode == ErrorMode::kStrict) {
        return errors::InvalidArgument("Invalid code point ", c,
                                       " (errors='strict'; use errors='replace' or 'ignore')");
      }
      if (mode == ErrorMode::kIgnore) return Status::OK();
      c = replacement;
    }
    AppendEncoded(c, encoding, out);
    return Status::OK();
  }
};

// Writes a vector of row offsets (int32 or int64) into output `index`.
Status WriteSplits(KernelContext& ctx, int index, const std::vector<int64_t>& splits) {
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(index, TensorShape{static_cast<int64_t>(splits.size())}, &out));
  for (size_t i = 0; i < splits.size(); ++i) {
    if (out->dtype() == DType::kInt32) {
      out->data<int32_t>()[i] = static_cast<int32_t>(splits[i]);
    } else {
      out->data<int64_t>()[i] = splits[i];
    }
  }
  return Status::OK();
}

// --- UnicodeDecode, UnicodeDecodeWithOffsets ---------------------------------------------------

template <bool kOffsets>
class UnicodeDecodeKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return decoder_.Init(node().type(), node().attrs()); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& input = ctx.input(0);
    std::vector<int64_t> splits{0}, chars, starts;
    for (int64_t i = 0; i < input.num_elements(); ++i) {
      FS_RETURN_IF_ERROR(
          decoder_.Decode(input.data<std::string>()[i], [&](int64_t c, int64_t start) {
            chars.push_back(c);
            if (kOffsets) starts.push_back(start);
          }));
      splits.push_back(static_cast<int64_t>(chars.size()));
    }
    FS_RETURN_IF_ERROR(WriteSplits(ctx, 0, splits));
    Tensor* values;
    const int64_t n = static_cast<int64_t>(chars.size());
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{n}, &values));
    std::transform(chars.begin(), chars.end(), values->data<int32_t>(),
                   [](int64_t c) { return static_cast<int32_t>(c); });
    if (kOffsets) {
      Tensor* offsets;
      FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{n}, &offsets));
      std::copy(starts.begin(), starts.end(), offsets->data<int64_t>());
    }
    return Status::OK();
  }

 private:
  Decoder decoder_;
};

Status UnicodeDecodeShape(InferenceContext& ctx) {
  const PartialShape& input = ctx.input(0);
  int64_t rows = -1;
  if (input.known_rank()) {
    rows = array_util::KnownProduct(input, 0, input.rank());
    if (rows >= 0) ++rows;
  }
  ctx.set_output(0, PartialShape({rows}));
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, PartialShape({-1}));
  return Status::OK();
}

template <bool kOffsets>
OpBuilder DecodeOp(const char* name, const char* doc) {
  OpBuilder builder(name);
  builder.Input("input", "string").Output("row_splits", "Tsplits").Output("char_values", "int32");
  if (kOffsets) builder.Output("char_to_byte_starts", "int64");
  builder.RequiredAttr("input_encoding", AttrType::kString)
      .Attr("errors", "replace")
      .Attr("replacement_char", 65533)
      .Attr("replace_control_characters", false)
      .TypeAttr("Tsplits", array_util::kIndexTypes, DType::kInt64)
      .Shape(UnicodeDecodeShape)
      .KernelClass<UnicodeDecodeKernel<kOffsets>>("CPU")
      .NotDifferentiable()
      .Doc(doc);
  return builder;
}

FS_REGISTER_OP(DecodeOp<false>("UnicodeDecode",
                               "The code points of each string (flattened) as a ragged tensor: "
                               "row_splits [num_strings + 1] and char_values."));
FS_REGISTER_OP(DecodeOp<true>("UnicodeDecodeWithOffsets",
                              "UnicodeDecode, and the byte offset in its string where each "
                              "character starts."));

// --- UnicodeEncode -------------------------------------------------------------------------------

class UnicodeEncodeKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return encoder_.Init("UnicodeEncode", node().attrs()); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& values = ctx.input(0);
    const Tensor& splits_tensor = ctx.input(1);
    if (values.rank() != 1 || splits_tensor.rank() != 1 || splits_tensor.num_elements() < 1) {
      return errors::InvalidArgument(
          "UnicodeEncode: input_values must be a vector and input_splits a non-empty vector, got "
          "shapes ",
          values.shape().ToString(), " and ", splits_tensor.shape().ToString());
    }
    const std::vector<int64_t> splits = array_util::IntValues(splits_tensor);
    if (splits.front() != 0 || splits.back() != values.num_elements() ||
        !std::is_sorted(splits.begin(), splits.end())) {
      return errors::InvalidArgument(
          "UnicodeEncode: input_splits must start at 0, not decrease "
          "and end at the number of input_values (",
          values.num_elements(), "), got [", array_util::JoinInts(splits), "]");
    }
    Tensor* out;
    const int64_t rows = static_cast<int64_t>(splits.size()) - 1;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{rows}, &out));
    const int32_t* chars = values.data<int32_t>();
    for (int64_t r = 0; r < rows; ++r) {
      std::string& text = out->data<std::string>()[r];
      for (int64_t j = splits[r]; j < splits[r + 1]; ++j) {
        FS_RETURN_IF_ERROR(encoder_.Append(chars[j], &text));
      }
    }
    return Status::OK();
  }

 private:
  Encoder encoder_;
};

FS_REGISTER_OP(OpBuilder("UnicodeEncode")
                   .Input("input_values", "int32")
                   .Input("input_splits", "Tsplits")
                   .Output("output", "string")
                   .Attr("errors", "replace")
                   .RequiredAttr("output_encoding", AttrType::kString)
                   .Attr("replacement_char", 65533)
                   .TypeAttr("Tsplits", array_util::kIndexTypes, DType::kInt64)
                   .Shape([](InferenceContext& ctx) {
                     const PartialShape& splits = ctx.input(1);
                     const int64_t n =
                         splits.known_rank() && splits.rank() == 1 ? splits.dim(0) : -1;
                     ctx.set_output(0, PartialShape({n < 0 ? -1 : n - 1}));
                     return Status::OK();
                   })
                   .KernelClass<UnicodeEncodeKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("The rows of a ragged tensor of code points (values and row splits) "
                        "encoded as strings."));

// --- UnicodeTranscode ----------------------------------------------------------------------------

class UnicodeTranscodeKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override {
    FS_RETURN_IF_ERROR(decoder_.Init("UnicodeTranscode", node().attrs()));
    return encoder_.Init("UnicodeTranscode", node().attrs());
  }

  Status Compute(KernelContext& ctx) override {
    const Tensor& input = ctx.input(0);
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, input.shape(), &out));
    for (int64_t i = 0; i < input.num_elements(); ++i) {
      std::string& text = out->data<std::string>()[i];
      Status appended;
      FS_RETURN_IF_ERROR(decoder_.Decode(input.data<std::string>()[i], [&](int64_t c, int64_t) {
        if (appended.ok()) appended = encoder_.Append(c, &text);
      }));
      FS_RETURN_IF_ERROR(appended);
    }
    return Status::OK();
  }

 private:
  Decoder decoder_;
  Encoder encoder_;
};

FS_REGISTER_OP(OpBuilder("UnicodeTranscode")
                   .Input("input", "string")
                   .Output("output", "string")
                   .RequiredAttr("input_encoding", AttrType::kString)
                   .RequiredAttr("output_encoding", AttrType::kString)
                   .Attr("errors", "replace")
                   .Attr("replacement_char", 65533)
                   .Attr("replace_control_characters", false)
                   .Shape(shape_fns::Unchanged)
                   .KernelClass<UnicodeTranscodeKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("Each string decoded from input_encoding and encoded in "
                        "output_encoding."));

// --- UnicodeScript -------------------------------------------------------------------------------

Status UnicodeScriptKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, input.shape(), &out));
  const int32_t* in = input.data<int32_t>();
  int32_t* dst = out->data<int32_t>();
  for (int64_t i = 0; i < input.num_elements(); ++i) {
    UErrorCode status = U_ZERO_ERROR;
    const UScriptCode script = uscript_getScript(in[i], &status);
    dst[i] = U_SUCCESS(status) ? static_cast<int32_t>(script) : -1;
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("UnicodeScript")
                   .Input("input", "int32")
                   .Output("output", "int32")
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", UnicodeScriptKernel)
                   .NotDifferentiable()
                   .Doc("ICU's UScriptCode of each code point (-1 for an invalid one)."));

}  // namespace
}  // namespace flowstone
