// PNG encoding shared by EncodePng and ImageSummary (libpng, in codec_ops.cc).
#pragma once

#include <string>

#include "flowstone/status.h"

namespace flowstone {

// Encodes `height` x `width` pixels of `channels` (1 to 4) uint8 samples, rows packed, as PNG
// bytes in *out with zlib's default compression. InvalidArgument when libpng refuses the image.
Status EncodePngImage(const unsigned char* pixels, int height, int width, int channels,
                      std::string* out);

}  // namespace flowstone
