"""Conformance cases for the image ops (see op_cases.py). Encoders are checked by decoding what
they wrote; JPEG is lossy, so its cases compare within a few levels of a smooth image. Resizes
are checked against a direct numpy transcription of TF1's sampling rules.
tests/python/data/test_data_images.py compares pixels and resizes with TensorFlow."""

import colorsys

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

_NMS_BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                       [0, 10.1, 1, 11.1], [0, 100, 1, 101]], np.float32)
_NMS_SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)

CASES = [
    # Greedy non-maximum suppression (indices checked with TensorFlow 2.21).
    Case("NonMaxSuppressionV3", [_NMS_BOXES, _NMS_SCORES, np.array(3, np.int32),
                                 np.array(0.5, np.float32), np.array(0.0, np.float32)],
         lambda *a: np.array([3, 0, 5], np.int32)),
    Case("NonMaxSuppressionV4", [_NMS_BOXES, _NMS_SCORES, np.array(5, np.int32),
                                 np.array(0.5, np.float32), np.array(0.4, np.float32)],
         lambda *a: (np.array([3, 0, 0, 0, 0], np.int32), np.array(2, np.int32)),
         attrs={"pad_to_max_output_size": True}, outputs=2),
    Case("NonMaxSuppressionV2", [np.array([[1, 1, 0, 0], [0, 0, 1, 1]], np.float32),
                                 np.array([0.5, 0.5], np.float32), np.array(2, np.int32),
                                 np.array(0.5, np.float32)],
         lambda *a: np.array([0], np.int32)),  # equal scores: the lower index first
    Case("NonMaxSuppression", [_NMS_BOXES, _NMS_SCORES, np.array(6, np.int32)],
         lambda *a: np.array([3, 0, 5], np.int32), attrs={"iou_threshold": 0.5}),
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


def _source(out, size, scale, half_pixel):
    i = np.arange(out, dtype=np.float32)
    return (i + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else i * scale


def _bilinear(images, size, align_corners=False, half_pixel=False):
    in_h, in_w = images.shape[1:3]
    out = []
    for axis_in, axis_out in ((in_h, size[0]), (in_w, size[1])):
        scale = np.float32((axis_in - 1) / (axis_out - 1) if align_corners and axis_out > 1
                           else axis_in / axis_out)
        src = _source(axis_out, axis_in, scale, half_pixel)
        lower = np.maximum(np.floor(src), 0).astype(int)
        upper = np.minimum(np.ceil(src) if half_pixel else np.floor(src) + 1, axis_in - 1)
        out.append((lower, upper.astype(int), (src - np.floor(src)).astype(np.float32)))
    (yl, yu, yw), (xl, xu, xw) = out
    x = images.astype(np.float32)
    xw = xw[None, None, :, None]

    def across(rows):
        return x[:, rows][:, :, xl] + (x[:, rows][:, :, xu] - x[:, rows][:, :, xl]) * xw

    top, bottom = across(yl), across(yu)
    return top + (bottom - top) * yw[None, :, None, None]


BATCH = np.random.default_rng(3).uniform(0, 255, (2, 5, 7, 3)).astype(np.float32)
PIXELS = np.random.default_rng(4).uniform(0, 1, (4, 5, 3)).astype(np.float32)


def _colorsys(fn, image):
    return np.array([fn(*px) for px in image.reshape(-1, 3)], np.float32).reshape(image.shape)

CASES += [
    Case("ResizeBilinear", [BATCH, np.array([8, 4], np.int32)],
         lambda x, s: _bilinear(x, s), rtol=1e-5, atol=1e-3),
    Case("ResizeBilinear", [BATCH, np.array([9, 3], np.int32)],
         lambda x, s: _bilinear(x, s, half_pixel=True), rtol=1e-5, atol=1e-3,
         attrs={"half_pixel_centers": True}),
    Case("ResizeBilinear", [BATCH, np.array([3, 11], np.int32)],
         lambda x, s: _bilinear(x, s, align_corners=True), rtol=1e-5, atol=1e-3,
         attrs={"align_corners": True}),
    Case("ResizeNearestNeighbor", [BATCH, np.array([10, 14], np.int32)],
         lambda x, s: x.repeat(2, axis=1).repeat(2, axis=2)),
    Case("ResizeNearestNeighbor", [BATCH.astype(np.float64), np.array([3, 5], np.int32)],
         lambda x, s: x[:, [0, 1, 3]][:, :, [0, 1, 2, 4, 5]], grad=[0]),
    Case("RGBToHSV", [PIXELS], lambda x: _colorsys(colorsys.rgb_to_hsv, x), atol=1e-5),
    Case("HSVToRGB", [PIXELS], lambda x: _colorsys(colorsys.hsv_to_rgb, x), atol=1e-5),
    Case("AdjustHue", [PIXELS, np.array(0.25, np.float32)],
         lambda x, d: _colorsys(lambda *p: colorsys.hsv_to_rgb(
             (colorsys.rgb_to_hsv(*p)[0] + d) % 1.0, *colorsys.rgb_to_hsv(*p)[1:]), x),
         atol=1e-5),
    Case("AdjustSaturation", [PIXELS, np.array(0.5, np.float32)],
         lambda x, f: _colorsys(lambda *p: colorsys.hsv_to_rgb(
             colorsys.rgb_to_hsv(*p)[0], colorsys.rgb_to_hsv(*p)[1] * f,
             colorsys.rgb_to_hsv(*p)[2]), x), atol=1e-5),
    Case("AdjustContrastv2", [BATCH, np.array(1.5, np.float32)],
         lambda x, f: (x - x.mean(axis=(1, 2), keepdims=True)) * f +
         x.mean(axis=(1, 2), keepdims=True), rtol=1e-5, atol=1e-3),
]

# The resize gradients are checked in op_cases_imagesignal.py (the gradient ops) and
# tests/python/test_image_boxes.py (finite differences).
GRADIENT_PENDING = set()
