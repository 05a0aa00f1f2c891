"""Conformance cases for the image codecs (see op_cases.py). Encoders are checked by decoding
what they wrote; JPEG is lossy, so its cases compare within a few levels of a smooth image.
tests/python/data/test_data_images.py compares pixels with TensorFlow's decoders."""

import numpy as np

from flowstone.ops import image_ops
from op_cases import Case


def _gradient(height, width, channels):
    y, x = np.mgrid[0:height, 0:width]
    planes = [(x * 7 + y * 3 + 40 * c) % 256 for c in range(channels)]
    return np.stack(planes, axis=-1).astype(np.uint8)


RGB = _gradient(6, 5, 3)
RGBA = _gradient(4, 7, 4)
SMOOTH = np.full((16, 16, 3), 128, np.uint8) + np.arange(16, dtype=np.uint8)[None, :, None]

CASES = [
    Case("EncodePng", [RGBA], lambda x: x,
         build=lambda x: image_ops.decode_png(image_ops.encode_png(x)).op),
    Case("DecodePng", [RGB], lambda x: x,
         build=lambda x: image_ops.decode_png(image_ops.encode_png(x), channels=3).op),
    Case("DecodeImage", [RGB[..., :1]], lambda x: x,
         build=lambda x: image_ops.decode_image(image_ops.encode_png(x)).op),
    Case("EncodeJpeg", [SMOOTH], lambda x: x, atol=4,
         build=lambda x: image_ops.decode_jpeg(image_ops.encode_jpeg(x, quality=100)).op),
    Case("DecodeJpeg", [SMOOTH], lambda x: x[..., :1], atol=4,
         build=lambda x: image_ops.decode_jpeg(image_ops.encode_jpeg(x[..., :1], quality=100),
                                               channels=1, dct_method="INTEGER_ACCURATE").op),
]
