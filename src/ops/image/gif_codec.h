// GIF decoding over giflib (Debian's libgif-dev), shared by DecodeGif and DecodeImage.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "flowstone/status.h"

namespace flowstone {

// Decodes every frame of a GIF (only the first unless `all_frames`) as TensorFlow does: frames
// of the largest frame's height and width (not the logical screen's), RGB, each frame drawn over
// the one before it; transparent pixels keep the previous frame's colour (black in the first
// frame). `allocate(frames, height, width)` returns the [frames, height, width, 3] uint8 buffer
// to fill, or an error. Corrupt data is InvalidArgument, never a crash.
Status DecodeGifFrames(const std::string& data, bool all_frames,
                       const std::function<Status(int64_t, int64_t, int64_t, uint8_t**)>& allocate);

// Whether `data` starts with a GIF signature.
bool IsGif(const std::string& data);

}  // namespace flowstone
