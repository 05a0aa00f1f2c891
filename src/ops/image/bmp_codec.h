// BMP decoding shared by DecodeBmp and DecodeImage (bmp_ops.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "flowstone/status.h"

namespace flowstone {

// Decodes an uncompressed BMP of 8, 24 or 32 bits per pixel as TensorFlow does: 1, 3 or 4
// channels (BGR(A) to RGB(A); 8-bit indices as grey, without the palette), bottom-up rows
// unless the height is negative. `channels` 0 takes the file's; another must match it.
// `allocate(height, width, channels)` returns the buffer to fill. Short or inconsistent data is
// InvalidArgument, never a read past its end.
Status DecodeBmpImage(const std::string& data, int64_t channels,
                      const std::function<Status(int64_t, int64_t, int64_t, uint8_t**)>& allocate);

}  // namespace flowstone
