// DecodeBmp (tf.io.decode_bmp): uncompressed Windows bitmaps, read from the BITMAPINFOHEADER
// fields TensorFlow reads (pixel offset, width, height, bits per pixel). A BMP has no
// compression to undo, so there is no codec library to call, as in TensorFlow.
#include <cstdlib>
#include <cstring>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/image/bmp_codec.h"

namespace flowstone {

namespace {

template <typename T>
T Field(const std::string& data, size_t offset) {
  T value;
  std::memcpy(&value, data.data() + offset, sizeof(T));  // little-endian, as BMP is
  return value;
}

}  // namespace

Status DecodeBmpImage(const std::string& data, int64_t channels,
                      const std::function<Status(int64_t, int64_t, int64_t, uint8_t**)>& allocate) {
  if (data.size() < 32) {
    return errors::InvalidArgument("Incomplete BMP content: the header needs at least 32 bytes, ",
                                   "got ", data.size());
  }
  const int64_t offset = Field<int32_t>(data, 10);
  const int64_t width = Field<int32_t>(data, 18);
  const int64_t signed_height = Field<int32_t>(data, 22);
  const int64_t file_channels = Field<int16_t>(data, 28) / 8;
  if (channels == 0) channels = file_channels;
  if (channels != file_channels) {
    return errors::InvalidArgument("channels attribute ", channels,
                                   " does not match bits per pixel from file ", file_channels * 8);
  }
  if (channels != 1 && channels != 3 && channels != 4) {
    return errors::InvalidArgument("BMP images of 8, 24 or 32 bits per pixel are supported, got ",
                                   file_channels * 8);
  }
  if (width <= 0 || signed_height == 0 || offset < 0) {
    return errors::InvalidArgument("Invalid BMP header: width ", width, ", height ", signed_height,
                                   ", pixel offset ", offset);
  }
  const int64_t height = std::abs(signed_height);
  const int64_t row_size = (channels * width + 3) / 4 * 4;  // rows are padded to 4 bytes
  // In 128 bits: a forged header's sizes may multiply past 2^63.
  const __int128 needed = static_cast<__int128>(offset) +
                          static_cast<__int128>(height - 1) * row_size + width * channels;
  if (needed > static_cast<__int128>(data.size())) {
    return errors::InvalidArgument("Incomplete BMP content: ", width, " x ", height, " pixels of ",
                                   channels, " bytes at offset ", offset, " need more than the ",
                                   data.size(), " bytes given");
  }
  uint8_t* out = nullptr;
  FS_RETURN_IF_ERROR(allocate(height, width, channels, &out));
  const auto* pixels = reinterpret_cast<const uint8_t*>(data.data()) + offset;
  const bool top_down = signed_height < 0;
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* src = pixels + (top_down ? y : height - 1 - y) * row_size;
    uint8_t* dst = out + y * width * channels;
    for (int64_t x = 0; x < width; ++x, src += channels, dst += channels) {
      if (channels == 1) {
        dst[0] = src[0];
        continue;
      }
      dst[0] = src[2];
      dst[1] = src[1];
      dst[2] = src[0];
      if (channels == 4) dst[3] = src[3];
    }
  }
  return Status::OK();
}

namespace {

Status DecodeBmpKernel(KernelContext& ctx) {
  const Tensor& contents = ctx.input(0);
  if (contents.rank() != 0) {
    return errors::InvalidArgument("DecodeBmp: contents must be a scalar string, got shape ",
                                   contents.shape().ToString());
  }
  const int64_t channels = ctx.attrs().GetOr<int64_t>("channels", 0);
  return DecodeBmpImage(
      *contents.data<std::string>(), channels,
      [&](int64_t height, int64_t width, int64_t depth, uint8_t** out) {
        Tensor* image;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{height, width, depth}, &image));
        *out = image->data<uint8_t>();
        return Status::OK();
      });
}

Status DecodeBmpShape(InferenceContext& ctx) {
  const int64_t channels = ctx.attrs().GetOr<int64_t>("channels", 0);
  ctx.set_output(0, PartialShape{-1, -1, channels == 0 ? -1 : channels});
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("DecodeBmp")
                   .Input("contents", "string")
                   .Output("image", "uint8")
                   .Attr("channels", 0)
                   .Shape(DecodeBmpShape)
                   .Kernel("CPU", DecodeBmpKernel)
                   .NotDifferentiable()
                   .Doc("A BMP image's pixels, [height, width, channels] uint8."));

}  // namespace
}  // namespace flowstone
