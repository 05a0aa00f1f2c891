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
  unsigned char* out = nullptr;
  status = allocate(cinfo.output_height, cinfo.output_width, channels, &out);
  if (status.ok()) {
    const size_t stride = static_cast<size_t>(cinfo.output_width) * channels;
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW row = out + stride * cinfo.output_scanline;
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
  }
  jpeg_destroy_decompress(&cinfo);
  return status;
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

enum class Format { kJpeg, kPng, kUnknown };

Format Sniff(const std::string& data) {
  if (data.size() >= 3 && std::memcmp(data.data(), "\xff\xd8\xff", 3) == 0) return Format::kJpeg;
  if (data.size() >= 8 && std::memcmp(data.data(), "\x89PNG\r\n\x1a\n", 8) == 0) {
    return Format::kPng;
  }
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

// Decodes by the data's own format: like TensorFlow's, DecodeJpeg and DecodePng also read the
// other format.
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
  Format format = Sniff(*data);
  if (format == Format::kUnknown) {
    return errors::InvalidArgument(
        "Unknown image file format. One of JPEG, PNG, GIF, BMP required. (Only JPEG and PNG "
        "are decoded by Flowstone.)");
  }
  auto allocate = [&](unsigned height, unsigned width, int channels, unsigned char** out) {
    Tensor* image;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(
        0, TensorShape{static_cast<int64_t>(height), static_cast<int64_t>(width), channels},
        &image));
    *out = image->data<uint8_t>();
    return Status::OK();
  };
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
                   .Shape(DecodeShape)
                   .Kernel("CPU", DecodeKernel)
                   .NotDifferentiable()
                   .Doc("A JPEG or PNG image's pixels, by the data's format."));

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

Status EncodeJpegKernel(KernelContext& ctx) {
  const Tensor& image = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckImage(image, {1, 3}));
  JpegEncodeFlags flags;
  flags.quality = static_cast<int>(ctx.attrs().GetOr<int64_t>("quality", 95));
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
