// Image codecs over maintained libraries: libjpeg-turbo (Debian's libjpeg62-turbo-dev) and libpng
// (libpng-dev). DecodeJpeg, DecodePng, DecodeImage (by the file's magic bytes), EncodeJpeg and
// EncodePng. Corrupt or truncated data is InvalidArgument, never a crash: libjpeg's fatal errors
// return here through longjmp instead of exiting.
#include <png.h>
#include <setjmp.h>

#include <cstdio>
#include <cstring>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/image/bmp_codec.h"
#include "ops/image/gif_codec.h"
#include "ops/image/png_codec.h"

namespace flowstone {
namespace {

// --- JPEG -----------------------------------------------------------------------------------

struct JpegError {
  jpeg_error_mgr manager;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* error = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, error->message);
  longjmp(error->jump, 1);
}

void JpegSilence(j_common_ptr, int) {}

struct JpegFlags {
  int channels = 0;
  int ratio = 1;
  bool fancy_upscaling = true;
  std::string dct_method;
  // DecodeAndCropJpeg's window [y, x, height, width] of the decoded image; height < 0: none.
  int64_t crop[4] = {0, 0, -1, -1};
};

// Decodes into a tensor allocated through `allocate(height, width, channels)`. No C++ object
// with a destructor lives between setjmp and a longjmp back to it.
template <typename Allocate>
Status DecodeJpeg(const std::string& data, const JpegFlags& flags, Allocate allocate) {
  jpeg_decompress_struct cinfo;
  JpegError error;
  cinfo.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = JpegErrorExit;
  error.manager.emit_message = JpegSilence;
  error.message[0] = '\0';
  Status status;
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return errors::InvalidArgument("Invalid JPEG data or crop window, data size ", data.size(),
                                   ": ", error.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(data.data()),
               static_cast<unsigned long>(data.size()));
  jpeg_read_header(&cinfo, TRUE);
  int channels = flags.channels;
  if (channels == 0) channels = cinfo.num_components == 1 ? 1 : 3;
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned int>(flags.ratio);
  cinfo.do_fancy_upsampling = flags.fancy_upscaling ? TRUE : FALSE;
  cinfo.dct_method = flags.dct_method == "INTEGER_ACCURATE" ? JDCT_ISLOW : JDCT_IFAST;
  jpeg_start_decompress(&cinfo);
  const int64_t height = cinfo.output_height, width = cinfo.output_width;
  const bool crop = flags.crop[2] >= 0;
  const int64_t top = crop ? flags.crop[0] : 0, left = crop ? flags.crop[1] : 0;
  const int64_t out_height = crop ? flags.crop[2] : height;
  const int64_t out_width = crop ? flags.crop[3] : width;
  if (crop && (top < 0 || left < 0 || out_height <= 0 || out_width <= 0 ||
               top + out_height > height || left + out_width > width)) {
    status =
        errors::InvalidArgument("crop_window [", top, ", ", left, ", ", out_height, ", ", out_width,
                                "] is not inside the ", height, " x ", width, " image");
  }
  unsigned char* out = nullptr;
  if (status.ok()) {
    status = allocate(static_cast<unsigned>(out_height), static_cast<unsigned>(out_width), channels,
                      &out);
  }
  if (status.ok() && !crop) {
    const size_t stride = static_cast<size_t>(width) * channels;
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW row = out + stride * cinfo.output_scanline;
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
  } else if (status.ok()) {
    // As TensorFlow decodes a crop: libjpeg-turbo decodes only the rows of the window and the
    // columns of the iMCUs it touches (the first moved left to an iMCU boundary), so pixels at
    // the window's edges are upsampled from the window's own samples. The row buffer belongs to
    // libjpeg's memory manager: a longjmp out of libjpeg must not skip a destructor.
    JDIMENSION x = static_cast<JDIMENSION>(left), w = static_cast<JDIMENSION>(out_width);
    jpeg_crop_scanline(&cinfo, &x, &w);
    jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(top));
    const size_t skip = (static_cast<size_t>(left) - x) * channels;
    const size_t out_stride = static_cast<size_t>(out_width) * channels;
    JSAMPARRAY row = (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE,
                                                cinfo.output_width * channels, 1);
    for (int64_t y = 0; y < out_height; ++y) {
      jpeg_read_scanlines(&cinfo, row, 1);
      std::memcpy(out + out_stride * y, row[0] + skip, out_stride);
    }
    jpeg_abort_decompress(&cinfo);
  }
  jpeg_destroy_decompress(&cinfo);
  return status;
}

// The height, width and components of a JPEG, from its header.
Status JpegShape(const std::string& data, int64_t shape[3]) {
  jpeg_decompress_struct cinfo;
  JpegError error;
  cinfo.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = JpegErrorExit;
  error.manager.emit_message = JpegSilence;
  error.message[0] = '\0';
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return errors::InvalidArgument("Invalid JPEG data, size ", data.size(), ": ", error.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(data.data()),
               static_cast<unsigned long>(data.size()));
  jpeg_read_header(&cinfo, TRUE);
  shape[0] = cinfo.image_height;
  shape[1] = cinfo.image_width;
  shape[2] = cinfo.num_components;
  jpeg_destroy_decompress(&cinfo);
  return Status::OK();
}

struct JpegEncodeFlags {
  int quality = 95;
  bool progressive = false;
  bool optimize_size = false;
  bool chroma_downsampling = true;
};

Status EncodeJpeg(const unsigned char* pixels, int height, int width, int channels,
                  const JpegEncodeFlags& flags, std::string* out) {
  jpeg_compress_struct cinfo;
  JpegError error;
  cinfo.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = JpegErrorExit;
  error.manager.emit_message = JpegSilence;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (setjmp(error.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
    return errors::InvalidArgument("JPEG encoding failed: ", error.message);
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, flags.quality, TRUE);
  if (flags.progressive) jpeg_simple_progression(&cinfo);
  cinfo.optimize_coding = flags.optimize_size ? TRUE : FALSE;
  if (!flags.chroma_downsampling && channels == 3) {
    for (int c = 0; c < 3; ++c) {
      cinfo.comp_info[c].h_samp_factor = 1;
      cinfo.comp_info[c].v_samp_factor = 1;
    }
  }
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = static_cast<size_t>(width) * channels;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<unsigned char*>(pixels) + stride * cinfo.next_scanline;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  out->assign(reinterpret_cast<char*>(buffer), size);
  std::free(buffer);
  return Status::OK();
}

// --- PNG ------------------------------------------------------------------------------------

png_uint_32 PngFormat(int channels) {
  switch (channels) {
    case 1:
      return PNG_FORMAT_GRAY;
    case 2:
      return PNG_FORMAT_GA;
    case 3:
      return PNG_FORMAT_RGB;
    default:
      return PNG_FORMAT_RGBA;
  }
}

template <typename Allocate>
Status DecodePng(const std::string& data, int channels, Allocate allocate) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, data.data(), data.size())) {
    return errors::InvalidArgument("Invalid PNG data, size ", data.size(), ": ", image.message);
  }
  if (channels == 0) channels = static_cast<int>(PNG_IMAGE_SAMPLE_CHANNELS(image.format));
  image.format = PngFormat(channels);
  unsigned char* out = nullptr;
  Status status = allocate(image.height, image.width, channels, &out);
  if (!status.ok()) {
    png_image_free(&image);
    return status;
  }
  if (!png_image_finish_read(&image, nullptr, out, 0, nullptr)) {
    return errors::InvalidArgument("Invalid PNG data, size ", data.size(), ": ", image.message);
  }
  return Status::OK();
}

Status EncodePng(const unsigned char* pixels, int height, int width, int channels,
                 std::string* out) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PngFormat(channels);
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, pixels, 0, nullptr)) {
    return errors::InvalidArgument("PNG encoding failed: ", image.message);
  }
  out->resize(size);
  if (!png_image_write_to_memory(&image, out->data(), &size, 0, pixels, 0, nullptr)) {
    return errors::InvalidArgument("PNG encoding failed: ", image.message);
  }
  out->resize(size);
  return Status::OK();
}

// --- Kernels --------------------------------------------------------------------------------

enum class Format { kJpeg, kPng, kGif, kBmp, kUnknown };

Format Sniff(const std::string& data) {
  if (data.size() >= 3 && std::memcmp(data.data(), "\xff\xd8\xff", 3) == 0) return Format::kJpeg;
  if (data.size() >= 8 && std::memcmp(data.data(), "\x89PNG\r\n\x1a\n", 8) == 0) {
    return Format::kPng;
  }
  if (IsGif(data)) return Format::kGif;
  if (data.size() >= 2 && std::memcmp(data.data(), "BM", 2) == 0) return Format::kBmp;
  return Format::kUnknown;
}

Status ReadContents(KernelContext& ctx, const std::string** out) {
  const Tensor& t = ctx.input(0);
  if (t.rank() != 0) {
    return errors::InvalidArgument("contents must be scalar, got shape ", t.shape().ToString());
  }
  *out = t.data<std::string>();
  return Status::OK();
}

Status CheckChannels(int64_t channels, std::initializer_list<int64_t> allowed) {
  for (int64_t a : allowed) {
    if (channels == a) return Status::OK();
  }
  return errors::InvalidArgument("channels must be 0, 1, 3 or 4 (JPEG: 0, 1 or 3), got ", channels);
}

// DecodeImage's GIFs: every frame ([frames, height, width, 3]) with expand_animations, else the
// first ([height, width, 3]).
Status DecodeGifImage(KernelContext& ctx, const std::string& data, int64_t channels) {
  if (channels != 0 && channels != 3) {
    return errors::InvalidArgument("channels must be 0 or 3 for GIF, got ", channels);
  }
  const bool animations = ctx.attrs().GetOr<bool>("expand_animations", true);
  return DecodeGifFrames(
      data, animations, [&](int64_t frames, int64_t height, int64_t width, uint8_t** out) {
        Tensor* image;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(
            0, animations ? TensorShape{frames, height, width, 3} : TensorShape{height, width, 3},
            &image));
        *out = image->data<uint8_t>();
        return Status::OK();
      });
}

// Decodes by the data's own format: like TensorFlow's, DecodeJpeg and DecodePng also read the
// other format, and DecodeImage reads GIF and BMP too.
Status DecodeKernel(KernelContext& ctx) {
  const std::string* data;
  FS_RETURN_IF_ERROR(ReadContents(ctx, &data));
  const AttrMap& attrs = ctx.attrs();
  JpegFlags flags;
  flags.channels = static_cast<int>(attrs.GetOr<int64_t>("channels", 0));
  flags.ratio = static_cast<int>(attrs.GetOr<int64_t>("ratio", 1));
  flags.fancy_upscaling = attrs.GetOr<bool>("fancy_upscaling", true);
  flags.dct_method = attrs.GetOr<std::string>("dct_method", "");
  if (flags.ratio != 1 && flags.ratio != 2 && flags.ratio != 4 && flags.ratio != 8) {
    return errors::InvalidArgument("ratio must be 1, 2, 4, or 8, got ", flags.ratio);
  }
  if (ctx.node().type() == "DecodeAndCropJpeg") {
    const Tensor& window = ctx.input(1);
    if (window.rank() != 1 || window.num_elements() != 4) {
      return errors::InvalidArgument("crop_window must be 1-D with 4 elements [y, x, height, ",
                                     "width], got shape ", window.shape().ToString());
    }
    for (int i = 0; i < 4; ++i) flags.crop[i] = window.ElementAsInt64(i);
    if (flags.crop[2] < 0 || flags.crop[3] < 0) {
      return errors::InvalidArgument("crop_window's height and width must be non-negative, got ",
                                     flags.crop[2], " and ", flags.crop[3]);
    }
  }
  Format format = Sniff(*data);
  const bool any_format = ctx.node().type() == "DecodeImage";
  if (format == Format::kUnknown ||
      (!any_format && (format == Format::kGif || format == Format::kBmp))) {
    return errors::InvalidArgument(
        "Unknown image file format. One of JPEG, PNG, GIF, BMP required. (", ctx.node().type(),
        any_format ? " reads all four.)" : " reads JPEG and PNG; decode_image reads all four.)");
  }
  auto allocate = [&](unsigned height, unsigned width, int channels, unsigned char** out) {
    Tensor* image;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(
        0, TensorShape{static_cast<int64_t>(height), static_cast<int64_t>(width), channels},
        &image));
    *out = image->data<uint8_t>();
    return Status::OK();
  };
  if (format == Format::kGif) return DecodeGifImage(ctx, *data, flags.channels);
  if (format == Format::kBmp) {
    return DecodeBmpImage(*data, flags.channels,
                          [&](int64_t h, int64_t w, int64_t c, uint8_t** out) {
                            return allocate(static_cast<unsigned>(h), static_cast<unsigned>(w),
                                            static_cast<int>(c), out);
                          });
  }
  if (format == Format::kJpeg) {
    FS_RETURN_IF_ERROR(CheckChannels(flags.channels, {0, 1, 3}));
    return DecodeJpeg(*data, flags, allocate);
  }
  FS_RETURN_IF_ERROR(CheckChannels(flags.channels, {0, 1, 2, 3, 4}));
  return DecodePng(*data, flags.channels, allocate);
}

Status DecodeShape(InferenceContext& ctx) {
  const int64_t channels = ctx.attrs().GetOr<int64_t>("channels", 0);
  ctx.set_output(0, PartialShape{-1, -1, channels == 0 ? -1 : channels});
  return Status::OK();
}

// DecodeImage: a GIF gives every frame (rank 4) unless expand_animations is off, so the rank is
// known only then, as in TensorFlow.
Status DecodeImageShape(InferenceContext& ctx) {
  if (ctx.attrs().GetOr<bool>("expand_animations", true)) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  return DecodeShape(ctx);
}

// DecodeAndCropJpeg: the crop window's height and width when it is a constant.
Status DecodeAndCropShape(InferenceContext& ctx) {
  const int64_t channels = ctx.attrs().GetOr<int64_t>("channels", 0);
  const Tensor* window = ctx.input_value(1);
  const bool known = window != nullptr && window->num_elements() == 4;
  ctx.set_output(
      0, PartialShape{known ? window->ElementAsInt64(2) : -1,
                      known ? window->ElementAsInt64(3) : -1, channels == 0 ? -1 : channels});
  return Status::OK();
}

Status ExtractJpegShapeKernel(KernelContext& ctx) {
  const std::string* data;
  FS_RETURN_IF_ERROR(ReadContents(ctx, &data));
  int64_t shape[3];
  FS_RETURN_IF_ERROR(JpegShape(*data, shape));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{3}, &out));
  for (int i = 0; i < 3; ++i) {
    if (out->dtype() == DType::kInt64) {
      out->data<int64_t>()[i] = shape[i];
    } else {
      out->data<int32_t>()[i] = static_cast<int32_t>(shape[i]);
    }
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ExtractJpegShape")
                   .Input("contents", "string")
                   .Output("image_shape", "output_type")
                   .TypeAttr("output_type", {DType::kInt32, DType::kInt64}, DType::kInt32)
                   .Shape([](InferenceContext& ctx) {
                     ctx.set_output(0, PartialShape{3});
                     return Status::OK();
                   })
                   .Kernel("CPU", ExtractJpegShapeKernel)
                   .NotDifferentiable()
                   .Doc("A JPEG's [height, width, components], from its header alone."));

FS_REGISTER_OP(OpBuilder("DecodeAndCropJpeg")
                   .Input("contents", "string")
                   .Input("crop_window", "int32")
                   .Output("image", "uint8")
                   .Attr("channels", 0)
                   .Attr("ratio", 1)
                   .Attr("fancy_upscaling", true)
                   .Attr("try_recover_truncated", false)
                   .Attr("acceptable_fraction", 1.0f)
                   .Attr("dct_method", "")
                   .Shape(DecodeAndCropShape)
                   .Kernel("CPU", DecodeKernel)
                   .NotDifferentiable()
                   .Doc("The [y, x, height, width] crop_window of a JPEG image's pixels."));

const std::vector<DType> kImageTypes = {DType::kUInt8};

FS_REGISTER_OP(OpBuilder("DecodeJpeg")
                   .Input("contents", "string")
                   .Output("image", "uint8")
                   .Attr("channels", 0)
                   .Attr("ratio", 1)
                   .Attr("fancy_upscaling", true)
                   .Attr("try_recover_truncated", false)
                   .Attr("acceptable_fraction", 1.0f)
                   .Attr("dct_method", "")
                   .Shape(DecodeShape)
                   .Kernel("CPU", DecodeKernel)
                   .NotDifferentiable()
                   .Doc("A JPEG image's pixels, [height, width, channels] uint8."));

FS_REGISTER_OP(OpBuilder("DecodePng")
                   .Input("contents", "string")
                   .Output("image", "dtype")
                   .Attr("channels", 0)
                   .TypeAttr("dtype", kImageTypes, DType::kUInt8)
                   .Shape(DecodeShape)
                   .Kernel("CPU", DecodeKernel)
                   .NotDifferentiable()
                   .Doc("A PNG image's pixels, [height, width, channels] uint8."));

FS_REGISTER_OP(OpBuilder("DecodeImage")
                   .Input("contents", "string")
                   .Output("image", "dtype")
                   .Attr("channels", 0)
                   .TypeAttr("dtype", kImageTypes, DType::kUInt8)
                   .Attr("expand_animations", true)
                   .Shape(DecodeImageShape)
                   .Kernel("CPU", DecodeKernel)
                   .NotDifferentiable()
                   .Doc("A JPEG, PNG, GIF or BMP image's pixels, by the data's format."));

Status CheckImage(const Tensor& image, std::initializer_list<int64_t> channels) {
  if (image.rank() != 3) {
    return errors::InvalidArgument("image must be 3-dimensional, got shape ",
                                   image.shape().ToString());
  }
  for (int64_t c : channels) {
    if (image.dim(2) == c) {
      if (image.dim(0) > (1 << 20) || image.dim(1) > (1 << 20)) {
        return errors::InvalidArgument("image is too large to encode: ", image.shape().ToString());
      }
      return Status::OK();
    }
  }
  return errors::InvalidArgument("image has ", image.dim(2),
                                 " channels, which this format cannot encode");
}

// EncodeJpeg, and EncodeJpegVariableQuality (quality an input, TensorFlow's defaults for the
// rest; tf.image.adjust_jpeg_quality).
Status EncodeJpegKernel(KernelContext& ctx) {
  const Tensor& image = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckImage(image, {1, 3}));
  JpegEncodeFlags flags;
  flags.quality = static_cast<int>(ctx.attrs().GetOr<int64_t>("quality", 95));
  if (ctx.num_inputs() == 2) {
    const Tensor& quality = ctx.input(1);
    if (quality.rank() != 0) {
      return errors::InvalidArgument("quality must be a scalar, got shape ",
                                     quality.shape().ToString());
    }
    flags.quality = static_cast<int>(quality.ElementAsInt64(0));
  }
  flags.progressive = ctx.attrs().GetOr<bool>("progressive", false);
  flags.optimize_size = ctx.attrs().GetOr<bool>("optimize_size", false);
  flags.chroma_downsampling = ctx.attrs().GetOr<bool>("chroma_downsampling", true);
  if (flags.quality < 0 || flags.quality > 100) {
    return errors::InvalidArgument("quality must be in [0,100], got ", flags.quality);
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  return EncodeJpeg(image.data<uint8_t>(), static_cast<int>(image.dim(0)),
                    static_cast<int>(image.dim(1)), static_cast<int>(image.dim(2)), flags,
                    out->data<std::string>());
}

FS_REGISTER_OP(OpBuilder("EncodeJpeg")
                   .Input("image", "uint8")
                   .Output("contents", "string")
                   .Attr("format", "")
                   .Attr("quality", 95)
                   .Attr("progressive", false)
                   .Attr("optimize_size", false)
                   .Attr("chroma_downsampling", true)
                   .Attr("density_unit", "in")
                   .Attr("x_density", 300)
                   .Attr("y_density", 300)
                   .Attr("xmp_metadata", "")
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", EncodeJpegKernel)
                   .NotDifferentiable()
                   .Doc("A [height, width, 1 or 3] uint8 image as JPEG bytes."));

FS_REGISTER_OP(OpBuilder("EncodeJpegVariableQuality")
                   .Input("images", "uint8")
                   .Input("quality", "int32")
                   .Output("contents", "string")
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", EncodeJpegKernel)
                   .NotDifferentiable()
                   .Doc("A [height, width, 1 or 3] uint8 image as JPEG bytes of the quality "
                        "(0 to 100) given as a tensor."));

Status EncodePngKernel(KernelContext& ctx) {
  const Tensor& image = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckImage(image, {1, 2, 3, 4}));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  return EncodePng(image.data<uint8_t>(), static_cast<int>(image.dim(0)),
                   static_cast<int>(image.dim(1)), static_cast<int>(image.dim(2)),
                   out->data<std::string>());
}

FS_REGISTER_OP(OpBuilder("EncodePng")
                   .Input("image", "T")
                   .Output("contents", "string")
                   .TypeAttr("T", kImageTypes, DType::kUInt8)
                   .Attr("compression", -1)
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", EncodePngKernel)
                   .NotDifferentiable()
                   .Doc("A [height, width, 1 to 4] uint8 image as PNG bytes."));

}  // namespace

Status EncodePngImage(const unsigned char* pixels, int height, int width, int channels,
                      std::string* out) {
  return EncodePng(pixels, height, width, channels, out);
}

}  // namespace flowstone
