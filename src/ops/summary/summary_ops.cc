// Summary ops: each produces a serialized `Summary` proto (proto/summary.proto) as a scalar
// string, as TensorFlow's do, so tf.summary.FileWriter writes the bytes into an Event unchanged
// and TensorBoard reads them. ScalarSummary, HistogramSummary (TensorFlow's bucket edges),
// ImageSummary (PNG), AudioSummaryV2 (16-bit PCM WAV), TensorSummaryV2 (tf.summary.text and
// tensor_summary) and MergeSummary. None is differentiable.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "flowstone/graph_def.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/image/png_codec.h"
#include "proto/summary.pb.h"
#include "proto/tensor.pb.h"

namespace flowstone {
namespace {

// The numbers a scalar or histogram summary accepts (TF's RealNumberTypes that Flowstone has).
const std::vector<DType> kSummaryNumberTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                                DType::kInt64,   DType::kUInt8,   DType::kFloat16,
                                                DType::kBFloat16};

Status SetSummaryOutput(KernelContext& ctx, const proto::Summary& summary) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  if (!summary.SerializeToString(out->data<std::string>())) {
    return errors::Internal("could not serialize the Summary of ", ctx.node().name());
  }
  return Status::OK();
}

Status ScalarTag(KernelContext& ctx, const char* what, std::string* tag) {
  const Tensor& t = ctx.input(0);
  if (t.rank() != 0) {
    return errors::InvalidArgument(what, " must be a scalar string, got shape ",
                                   t.shape().ToString(), " (op ", ctx.node().name(), ")");
  }
  *tag = *t.data<std::string>();
  return Status::OK();
}

// --- ScalarSummary ----------------------------------------------------------------------------

Status ScalarSummaryKernel(KernelContext& ctx) {
  const Tensor& tags = ctx.input(0);
  const Tensor& values = ctx.input(1);
  if (tags.shape() != values.shape()) {
    std::string single;
    if (tags.num_elements() == 1) single = " (tag '" + *tags.data<std::string>() + "')";
    return errors::InvalidArgument("tags and values not the same shape: ", tags.shape().ToString(),
                                   " != ", values.shape().ToString(), single);
  }
  proto::Summary summary;
  for (int64_t i = 0; i < tags.num_elements(); ++i) {
    proto::Summary::Value* value = summary.add_value();
    value->set_tag(tags.data<std::string>()[i]);
    value->set_simple_value(static_cast<float>(values.ElementAsDouble(i)));
  }
  return SetSummaryOutput(ctx, summary);
}

FS_REGISTER_OP(OpBuilder("ScalarSummary")
                   .Input("tags", "string")
                   .Input("values", "T")
                   .Output("summary", "string")
                   .TypeAttr("T", kSummaryNumberTypes)
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", ScalarSummaryKernel)
                   .NotDifferentiable()
                   .Doc("A Summary with one simple_value per element of `values`, tagged by the "
                        "element of `tags` at the same index."));

// --- HistogramSummary -------------------------------------------------------------------------

// TensorFlow's default bucket edges (its histogram.cc): ±1e-12 growing by 10% up to 1e20, then
// ±DBL_MAX, and 0. Bucket i counts values in [edge[i-1], edge[i]). TensorBoard reads the edges
// from the proto, so the same edges give the same picture.
const std::vector<double>& DefaultBucketLimits() {
  static const std::vector<double> limits = [] {
    std::vector<double> positive;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) positive.push_back(v);
    positive.push_back(DBL_MAX);
    std::vector<double> all;
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) all.push_back(-*it);
    all.push_back(0.0);
    all.insert(all.end(), positive.begin(), positive.end());
    return all;
  }();
  return limits;
}

// Runs of empty buckets collapse into one entry with the last edge of the run, as TensorFlow
// encodes them (preserve_zero_buckets = false); an empty histogram keeps one (DBL_MAX, 0).
void EncodeHistogram(const std::vector<double>& counts, proto::HistogramProto* out) {
  const std::vector<double>& limits = DefaultBucketLimits();
  for (size_t i = 0; i < counts.size();) {
    double end = limits[i];
    double count = counts[i];
    size_t j = i + 1;
    while (count <= 0 && j < counts.size() && counts[j] <= 0) {
      end = limits[j];
      count = counts[j];
      ++j;
    }
    out->add_bucket_limit(end);
    out->add_bucket(count);
    i = j;
  }
  if (out->bucket_size() == 0) {
    out->add_bucket_limit(DBL_MAX);
    out->add_bucket(0.0);
  }
}

Status HistogramSummaryKernel(KernelContext& ctx) {
  std::string tag;
  FS_RETURN_IF_ERROR(ScalarTag(ctx, "tag", &tag));
  const Tensor& values = ctx.input(1);
  const std::vector<double>& limits = DefaultBucketLimits();
  std::vector<double> counts(limits.size(), 0.0);
  double min = DBL_MAX, max = -DBL_MAX, num = 0, sum = 0, sum_squares = 0;
  for (int64_t i = 0; i < values.num_elements(); ++i) {
    const double v = values.ElementAsDouble(i);
    if (std::isnan(v)) {
      return errors::InvalidArgument("Nan in summary histogram for: ", ctx.node().name());
    }
    if (std::isinf(v)) {
      return errors::InvalidArgument("Infinity in summary histogram for: ", ctx.node().name());
    }
    size_t b = std::upper_bound(limits.begin(), limits.end(), v) - limits.begin();
    counts[std::min(b, limits.size() - 1)] += 1.0;
    min = std::min(min, v);
    max = std::max(max, v);
    num += 1;
    sum += v;
    sum_squares += v * v;
  }
  proto::Summary summary;
  proto::Summary::Value* value = summary.add_value();
  value->set_tag(tag);
  proto::HistogramProto* histo = value->mutable_histo();
  histo->set_min(min);
  histo->set_max(max);
  histo->set_num(num);
  histo->set_sum(sum);
  histo->set_sum_squares(sum_squares);
  EncodeHistogram(counts, histo);
  return SetSummaryOutput(ctx, summary);
}

FS_REGISTER_OP(OpBuilder("HistogramSummary")
                   .Input("tag", "string")
                   .Input("values", "T")
                   .Output("summary", "string")
                   .TypeAttr("T", kSummaryNumberTypes, DType::kFloat32)
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", HistogramSummaryKernel)
                   .NotDifferentiable()
                   .Doc("A Summary with a histogram of `values` (any shape) over TensorFlow's "
                        "default buckets. NaN or infinity is InvalidArgument."));

// --- ImageSummary -----------------------------------------------------------------------------

// The tag of output `i` depends on how many images were asked for, not on how many there are.
std::string OutputTag(const std::string& tag, const char* kind, int64_t max_outputs, int64_t i) {
  if (max_outputs > 1) return tag + "/" + kind + "/" + std::to_string(i);
  return tag + "/" + kind;
}

// TensorFlow's scaling of float images into uint8: all values >= 0 are scaled by 255/max; with
// negative values, by 127/max|v| around 128. Min and max skip pixels with a nonfinite channel,
// which are painted `bad_color`. The arithmetic is in T (float, or double for float64) and the
// cast truncates, as TensorFlow's does.
template <typename T, typename Compute>
void NormalizeImage(const T* values, int64_t pixels, int64_t depth, const uint8_t* bad_color,
                    uint8_t* out) {
  auto finite = [&](int64_t p) {
    for (int64_t c = 0; c < depth; ++c) {
      if (!std::isfinite(static_cast<float>(values[p * depth + c]))) return false;
    }
    return true;
  };
  float lo = std::numeric_limits<float>::infinity();
  float hi = -lo;
  for (int64_t p = 0; p < pixels; ++p) {
    if (!finite(p)) continue;
    for (int64_t c = 0; c < depth; ++c) {
      const float v = static_cast<float>(values[p * depth + c]);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  const float kZeroThreshold = 1e-6f;
  Compute scale, offset;
  if (lo < 0) {
    const float max_abs = std::max(std::abs(lo), std::abs(hi));
    scale = static_cast<Compute>(max_abs < kZeroThreshold ? 0.0f : 127.0f / max_abs);
    offset = static_cast<Compute>(128.0f);
  } else {
    scale = static_cast<Compute>(hi < kZeroThreshold ? 0.0f : 255.0f / hi);
    offset = static_cast<Compute>(0.0f);
  }
  for (int64_t p = 0; p < pixels; ++p) {
    const bool ok = finite(p);
    for (int64_t c = 0; c < depth; ++c) {
      out[p * depth + c] =
          ok ? static_cast<uint8_t>(static_cast<Compute>(values[p * depth + c]) * scale + offset)
             : bad_color[c];
    }
  }
}

Status ImageSummaryKernel(KernelContext& ctx) {
  std::string tag;
  FS_RETURN_IF_ERROR(ScalarTag(ctx, "tag", &tag));
  const Tensor& images = ctx.input(1);
  if (images.rank() != 4 || (images.dim(3) != 1 && images.dim(3) != 3 && images.dim(3) != 4)) {
    return errors::InvalidArgument("Tensor must be 4-D with last dim 1, 3, or 4, not ",
                                   images.shape().ToString(), " (tf.summary.image '", tag,
                                   "' takes [batch, height, width, channels])");
  }
  const int64_t batch = images.dim(0), height = images.dim(1), width = images.dim(2),
                depth = images.dim(3);
  if (batch >= (int64_t{1} << 31) || height >= (int64_t{1} << 31) || width >= (int64_t{1} << 31) ||
      height * width >= (int64_t{1} << 29)) {
    return errors::InvalidArgument("Tensor too large for summary ", images.shape().ToString());
  }
  if (height * width == 0) {
    return errors::InvalidArgument("input tensor must have non-zero dims. Found: [", batch, ", ",
                                   height, ", ", width, ", ", depth, "].");
  }
  const int64_t max_images = ctx.attrs().GetOr<int64_t>("max_images", 3);
  if (max_images < 1) {
    return errors::InvalidArgument("max_images must be at least 1, got ", max_images);
  }
  std::vector<uint8_t> bad_color = {255, 0, 0, 255};
  if (const AttrValue* attr = ctx.attrs().Find("bad_color")) {
    if (const Tensor* t = std::get_if<Tensor>(attr); t && t->dtype() == DType::kUInt8) {
      if (t->num_elements() < depth) {
        return errors::InvalidArgument("expected depth <= bad_color.size, got depth = ", depth,
                                       ", bad_color.size = ", t->num_elements());
      }
      bad_color.assign(t->data<uint8_t>(), t->data<uint8_t>() + t->num_elements());
    }
  }
  const int64_t pixels = height * width;
  std::vector<uint8_t> scratch(static_cast<size_t>(pixels * depth));
  proto::Summary summary;
  for (int64_t i = 0; i < std::min(max_images, batch); ++i) {
    const int64_t first = i * pixels * depth;
    const uint8_t* image = scratch.data();
    switch (images.dtype()) {
      case DType::kUInt8:
        image = images.data<uint8_t>() + first;
        break;
      case DType::kFloat32:
        NormalizeImage<float, float>(images.data<float>() + first, pixels, depth, bad_color.data(),
                                     scratch.data());
        break;
      case DType::kFloat64:
        NormalizeImage<double, double>(images.data<double>() + first, pixels, depth,
                                       bad_color.data(), scratch.data());
        break;
      default:  // float16, scaled in float32 arithmetic
        NormalizeImage<Half, float>(images.data<Half>() + first, pixels, depth, bad_color.data(),
                                    scratch.data());
        break;
    }
    proto::Summary::Value* value = summary.add_value();
    value->set_tag(OutputTag(tag, "image", max_images, i));
    proto::Summary::Image* out = value->mutable_image();
    out->set_height(static_cast<int>(height));
    out->set_width(static_cast<int>(width));
    out->set_colorspace(static_cast<int>(depth));
    FS_RETURN_IF_ERROR(EncodePngImage(image, static_cast<int>(height), static_cast<int>(width),
                                      static_cast<int>(depth),
                                      out->mutable_encoded_image_string()));
  }
  return SetSummaryOutput(ctx, summary);
}

AttrValue DefaultBadColor() {
  return AttrValue(Tensor::FromVector<uint8_t>({255, 0, 0, 255}, TensorShape{4}));
}

FS_REGISTER_OP(OpBuilder("ImageSummary")
                   .Input("tag", "string")
                   .Input("tensor", "T")
                   .Output("summary", "string")
                   .Attr("max_images", 3)
                   .TypeAttr("T",
                             {DType::kUInt8, DType::kFloat32, DType::kFloat16, DType::kFloat64},
                             DType::kFloat32)
                   .Attr("bad_color", DefaultBadColor())
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", ImageSummaryKernel)
                   .NotDifferentiable()
                   .Doc("A Summary with up to `max_images` PNG images of a [batch, height, width, "
                        "1|3|4] tensor, tagged 'tag/image/i' (or 'tag/image' when max_images "
                        "is 1). Float images are scaled into [0, 255] as TensorFlow does."));

// --- AudioSummaryV2 ---------------------------------------------------------------------------

void AppendLittleEndian(uint32_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// A RIFF/WAVE file of 16-bit little-endian PCM: samples scaled by 2^15, rounded and clamped.
Status EncodeWav(const float* samples, int64_t frames, int64_t channels, uint32_t sample_rate,
                 std::string* out) {
  const uint64_t data_bytes = static_cast<uint64_t>(frames) * channels * 2;
  if (data_bytes > 0xffffffffull - 36) {
    return errors::InvalidArgument("audio of ", frames, " frames x ", channels,
                                   " channels is too long for a WAV file");
  }
  out->clear();
  out->reserve(44 + data_bytes);
  out->append("RIFF");
  AppendLittleEndian(static_cast<uint32_t>(36 + data_bytes), 4, out);
  out->append("WAVEfmt ");
  AppendLittleEndian(16, 4, out);  // fmt chunk size
  AppendLittleEndian(1, 2, out);   // PCM
  AppendLittleEndian(static_cast<uint32_t>(channels), 2, out);
  AppendLittleEndian(sample_rate, 4, out);
  AppendLittleEndian(static_cast<uint32_t>(sample_rate * channels * 2), 4, out);  // bytes/s
  AppendLittleEndian(static_cast<uint32_t>(channels * 2), 2, out);                // block align
  AppendLittleEndian(16, 2, out);                                                 // bits
  out->append("data");
  AppendLittleEndian(static_cast<uint32_t>(data_bytes), 4, out);
  for (int64_t i = 0; i < frames * channels; ++i) {
    const float scaled = std::round(samples[i] * 32768.0f);
    const auto sample = static_cast<int16_t>(std::min(std::max(scaled, -32768.0f), 32767.0f));
    AppendLittleEndian(static_cast<uint16_t>(sample), 2, out);
  }
  return Status::OK();
}

Status AudioSummaryKernel(KernelContext& ctx) {
  std::string tag;
  FS_RETURN_IF_ERROR(ScalarTag(ctx, "tag", &tag));
  const Tensor& audio = ctx.input(1);
  const Tensor& rate = ctx.input(2);
  if (rate.rank() != 0) {
    return errors::InvalidArgument("sample_rate must be a scalar, got shape ",
                                   rate.shape().ToString());
  }
  const float sample_rate = *rate.data<float>();
  if (!(sample_rate > 0.0f)) {
    return errors::InvalidArgument("sample_rate must be > 0, got ", sample_rate);
  }
  if (audio.rank() != 2 && audio.rank() != 3) {
    return errors::InvalidArgument("Tensor must be 3-D or 2-D, got: ", audio.shape().ToString(),
                                   " (tf.summary.audio '", tag,
                                   "' takes [batch, frames] or [batch, frames, channels])");
  }
  const int64_t max_outputs = ctx.attrs().GetOr<int64_t>("max_outputs", 3);
  if (max_outputs < 1) {
    return errors::InvalidArgument("max_outputs must be at least 1, got ", max_outputs);
  }
  const int64_t batch = audio.dim(0), frames = audio.dim(1);
  const int64_t channels = audio.rank() == 2 ? 1 : audio.dim(2);
  auto rate_hz = static_cast<uint32_t>(std::max(1L, std::lrint(sample_rate)));
  proto::Summary summary;
  for (int64_t i = 0; i < std::min(max_outputs, batch); ++i) {
    proto::Summary::Value* value = summary.add_value();
    value->set_tag(OutputTag(tag, "audio", max_outputs, i));
    proto::Summary::Audio* out = value->mutable_audio();
    out->set_sample_rate(sample_rate);
    out->set_num_channels(channels);
    out->set_length_frames(frames);
    out->set_content_type("audio/wav");
    FS_RETURN_IF_ERROR(EncodeWav(audio.data<float>() + i * frames * channels, frames, channels,
                                 rate_hz, out->mutable_encoded_audio_string()));
  }
  return SetSummaryOutput(ctx, summary);
}

FS_REGISTER_OP(OpBuilder("AudioSummaryV2")
                   .Input("tag", "string")
                   .Input("tensor", "float32")
                   .Input("sample_rate", "float32")
                   .Output("summary", "string")
                   .Attr("max_outputs", 3)
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", AudioSummaryKernel)
                   .NotDifferentiable()
                   .Doc("A Summary with up to `max_outputs` WAV clips of a [batch, frames] or "
                        "[batch, frames, channels] float tensor in [-1, 1]."));

// --- TensorSummaryV2 --------------------------------------------------------------------------

Status TensorSummaryKernel(KernelContext& ctx) {
  std::string tag;
  FS_RETURN_IF_ERROR(ScalarTag(ctx, "tag", &tag));
  const Tensor& metadata = ctx.input(2);
  if (metadata.rank() != 0) {
    return errors::InvalidArgument("serialized_summary_metadata must be a scalar, got shape ",
                                   metadata.shape().ToString());
  }
  proto::Summary summary;
  proto::Summary::Value* value = summary.add_value();
  value->set_tag(tag);
  FS_RETURN_IF_ERROR(TensorToProto(ctx.input(1), value->mutable_tensor()));
  if (!value->mutable_metadata()->ParseFromString(*metadata.data<std::string>())) {
    return errors::InvalidArgument("serialized_summary_metadata of '", tag,
                                   "' is not a serialized SummaryMetadata proto");
  }
  return SetSummaryOutput(ctx, summary);
}

FS_REGISTER_OP(OpBuilder("TensorSummaryV2")
                   .Input("tag", "string")
                   .Input("tensor", "T")
                   .Input("serialized_summary_metadata", "string")
                   .Output("summary", "string")
                   .TypeAttr("T", kAllTypesAndString)
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", TensorSummaryKernel)
                   .NotDifferentiable()
                   .Doc("A Summary holding a whole tensor (as a TensorProto) and the metadata "
                        "that names the TensorBoard plugin reading it."));

// --- MergeSummary -----------------------------------------------------------------------------

Status MergeSummaryKernel(KernelContext& ctx) {
  proto::Summary merged;
  std::unordered_set<std::string> tags;
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    const Tensor& input = ctx.input(k);
    for (int64_t i = 0; i < input.num_elements(); ++i) {
      proto::Summary summary;
      if (!summary.ParseFromString(input.data<std::string>()[i])) {
        return errors::InvalidArgument(
            "Could not parse one of the summary inputs: input ", k, " of ", ctx.node().name(),
            " is not a serialized Summary; tf.summary.merge takes the outputs of summary ops");
      }
      for (const proto::Summary::Value& value : summary.value()) {
        // Tensor summaries may leave the tag empty; only named values must be unique.
        if (!value.tag().empty() && !tags.insert(value.tag()).second) {
          return errors::InvalidArgument("Duplicate tag ", value.tag(),
                                         " found in summary inputs ");
        }
        *merged.add_value() = value;
      }
    }
  }
  return SetSummaryOutput(ctx, merged);
}

FS_REGISTER_OP(OpBuilder("MergeSummary")
                   .InputList("inputs", "string", "N")
                   .Output("summary", "string")
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", MergeSummaryKernel)
                   .NotDifferentiable()
                   .Doc("The values of several serialized Summaries in one. A tag that occurs "
                        "twice is InvalidArgument."));

}  // namespace
}  // namespace flowstone
