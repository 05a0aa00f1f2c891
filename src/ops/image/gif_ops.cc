// DecodeGif (tf.io.decode_gif): all frames of a GIF, [num_frames, height, width, 3] uint8,
// decoded by giflib (Debian's libgif-dev, a maintained decoder; no LZW code of our own). The
// frame composition (canvas size, transparency, no disposal methods) is TensorFlow's.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/image/gif_codec.h"

namespace flowstone {

namespace {

struct Reader {
  const std::string* data;
  size_t offset = 0;
};

int ReadBytes(GifFileType* gif, GifByteType* out, int wanted) {
  auto* reader = static_cast<Reader*>(gif->UserData);
  const size_t left = reader->data->size() - reader->offset;
  const size_t n = std::min(left, static_cast<size_t>(std::max(wanted, 0)));
  std::memcpy(out, reader->data->data() + reader->offset, n);
  reader->offset += n;
  return static_cast<int>(n);
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};

const char* GifError(int code) {
  const char* message = GifErrorString(code);
  return message != nullptr ? message : "unknown giflib error";
}

}  // namespace

bool IsGif(const std::string& data) {
  return data.size() >= 6 &&
         (std::memcmp(data.data(), "GIF87a", 6) == 0 || std::memcmp(data.data(), "GIF89a", 6) == 0);
}

Status DecodeGifFrames(
    const std::string& data, bool all_frames,
    const std::function<Status(int64_t, int64_t, int64_t, uint8_t**)>& allocate) {
  Reader reader{&data};
  int error = D_GIF_SUCCEEDED;
  std::unique_ptr<GifFileType, GifCloser> gif(DGifOpen(&reader, ReadBytes, &error));
  if (gif == nullptr) {
    return errors::InvalidArgument("Invalid GIF data (size ", data.size(),
                                   "): failed to open: ", GifError(error));
  }
  if (DGifSlurp(gif.get()) != GIF_OK) {
    // Like TensorFlow, keep what decoded when the last frame that started has its pixels.
    const int count = gif->ImageCount;
    if (count <= 0 || gif->SavedImages[count - 1].RasterBits == nullptr) {
      return errors::InvalidArgument("Invalid GIF data (size ", data.size(),
                                     "): failed to slurp gif file: ", GifError(gif->Error));
    }
  }
  if (gif->ImageCount <= 0) {
    return errors::InvalidArgument("Invalid GIF data (size ", data.size(),
                                   "): gif file does not contain any image");
  }
  int64_t height = 0, width = 0;
  for (int k = 0; k < gif->ImageCount; ++k) {
    height = std::max<int64_t>(height, gif->SavedImages[k].ImageDesc.Height);
    width = std::max<int64_t>(width, gif->SavedImages[k].ImageDesc.Width);
  }
  const int64_t frames = all_frames ? gif->ImageCount : 1;
  uint8_t* pixels = nullptr;
  FS_RETURN_IF_ERROR(allocate(frames, height, width, &pixels));
  const int64_t frame_size = height * width * 3;
  for (int64_t k = 0; k < frames; ++k) {
    uint8_t* frame = pixels + k * frame_size;
    if (k == 0) {
      std::fill_n(frame, frame_size, 0);
    } else {
      std::copy_n(frame - frame_size, frame_size, frame);
    }
    const SavedImage& image = gif->SavedImages[k];
    const GifImageDesc& desc = image.ImageDesc;
    const ColorMapObject* colors = desc.ColorMap != nullptr ? desc.ColorMap : gif->SColorMap;
    if (colors == nullptr) {
      return errors::InvalidArgument("Invalid GIF data: frame ", k, " has no color map");
    }
    GraphicsControlBlock control;
    control.TransparentColor = NO_TRANSPARENT_COLOR;
    DGifSavedExtensionToGCB(gif.get(), static_cast<int>(k), &control);
    const int64_t top = std::max<int64_t>(desc.Top, 0);
    const int64_t left = std::max<int64_t>(desc.Left, 0);
    const int64_t bottom = std::min<int64_t>(int64_t{desc.Top} + desc.Height, height);
    const int64_t right = std::min<int64_t>(int64_t{desc.Left} + desc.Width, width);
    for (int64_t y = top; y < bottom; ++y) {
      for (int64_t x = left; x < right; ++x) {
        const int index = image.RasterBits[(y - desc.Top) * desc.Width + (x - desc.Left)];
        if (index == control.TransparentColor) continue;
        if (index >= colors->ColorCount) {
          return errors::InvalidArgument("Invalid GIF data: frame ", k, " has color index ", index,
                                         " outside of its color map of ", colors->ColorCount);
        }
        const GifColorType& c = colors->Colors[index];
        uint8_t* p = frame + (y * width + x) * 3;
        p[0] = c.Red;
        p[1] = c.Green;
        p[2] = c.Blue;
      }
    }
  }
  return Status::OK();
}

namespace {

Status DecodeGifKernel(KernelContext& ctx) {
  const Tensor& contents = ctx.input(0);
  if (contents.rank() != 0) {
    return errors::InvalidArgument("DecodeGif: contents must be a scalar string, got shape ",
                                   contents.shape().ToString());
  }
  const std::string& data = *contents.data<std::string>();
  if (!IsGif(data)) {
    return errors::InvalidArgument("DecodeGif: contents (", data.size(),
                                   " bytes) are not a GIF: it must start with GIF87a or GIF89a");
  }
  return DecodeGifFrames(
      data, true, [&](int64_t frames, int64_t height, int64_t width, uint8_t** out) {
        Tensor* image;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{frames, height, width, 3}, &image));
        *out = image->data<uint8_t>();
        return Status::OK();
      });
}

Status DecodeGifShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape{-1, -1, -1, 3});
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("DecodeGif")
                   .Input("contents", "string")
                   .Output("image", "uint8")
                   .Shape(DecodeGifShape)
                   .Kernel("CPU", DecodeGifKernel)
                   .NotDifferentiable()
                   .Doc("Every frame of a GIF, [num_frames, height, width, 3] uint8."));

}  // namespace
}  // namespace flowstone
