"""Conformance cases for the box, crop, bicubic/area resize, resize-gradient and GIF ops (see
op_cases.py), against numpy transcriptions of TensorFlow's sampling rules. The gradient ops are
checked against the adjoint (transpose) of the forward op's numpy reference, built column by
column; tests/python/test_image_boxes.py checks the gradients against finite differences and
everything against TensorFlow."""

import base64

import numpy as np

import flowstone as tf
from flowstone.framework.ops import apply_op
from op_cases import Case

RNG = np.random.default_rng(99)
IMAGE = RNG.uniform(0, 1, (2, 5, 6, 3)).astype(np.float32)
BOXES = np.array([[0.1, 0.2, 0.8, 0.9], [-0.2, 0.0, 0.6, 1.3], [0.5, 0.5, 0.5, 0.5],
                  [0.9, 0.8, 0.2, 0.1]], np.float32)
BOX_IND = np.array([0, 1, 1, 0], np.int32)
CROP = np.array([4, 3], np.int32)


def crop_and_resize(image, boxes, box_ind, crop_size, method="bilinear", extrapolation=0.0):
    """TensorFlow's CropAndResize in float32 arithmetic."""
    f = np.float32
    _, height, width, depth = image.shape
    ch, cw = (int(v) for v in crop_size)
    out = np.zeros((len(boxes), ch, cw, depth), np.float32)

    def positions(lo, hi, crop, size):
        if crop > 1:
            scale = (hi - lo) * f(size - 1) / f(crop - 1)
            return [lo * f(size - 1) + f(i) * scale for i in range(crop)]
        return [f(0.5) * (lo + hi) * f(size - 1)]

    for b, box in enumerate(boxes.astype(np.float32)):
        img = image[box_ind[b]].astype(np.float32)
        ys = positions(box[0], box[2], ch, height)
        xs = positions(box[1], box[3], cw, width)
        for y, in_y in enumerate(ys):
            for x, in_x in enumerate(xs):
                if not (0 <= in_y <= height - 1 and 0 <= in_x <= width - 1):
                    out[b, y, x] = extrapolation
                    continue
                if method == "nearest":
                    # roundf: halves away from zero
                    out[b, y, x] = img[int(np.floor(in_y + 0.5)), int(np.floor(in_x + 0.5))]
                    continue
                top, left = int(np.floor(in_y)), int(np.floor(in_x))
                bottom, right = int(np.ceil(in_y)), int(np.ceil(in_x))
                dy, dx = f(in_y - top), f(in_x - left)
                t = img[top, left] + (img[top, right] - img[top, left]) * dx
                bt = img[bottom, left] + (img[bottom, right] - img[bottom, left]) * dx
                out[b, y, x] = t + (bt - t) * dy
    return out


def adjoint(forward, in_shape, grads, dtype=np.float32):
    """forward's transpose applied to grads, for a forward linear in its input."""
    columns = []
    for i in range(int(np.prod(in_shape))):
        basis = np.zeros(int(np.prod(in_shape)), np.float64)
        basis[i] = 1
        columns.append(np.asarray(forward(basis.reshape(in_shape)), np.float64).reshape(-1))
    matrix = np.stack(columns, axis=1)
    return (matrix.T @ np.asarray(grads, np.float64).reshape(-1)).reshape(in_shape).astype(dtype)


def _scale(size_in, size_out, align_corners):
    if align_corners and size_out > 1:
        return np.float32((size_in - 1) / (size_out - 1))
    return np.float32(size_in / size_out)


def _cubic_table(a):
    x = (np.arange(1025) / 1024).astype(np.float32)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    x1 = x + np.float32(1)
    far = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    return near.astype(np.float32), far.astype(np.float32)


def _cubic_axis(size_out, size_in, scale, half_pixel):
    near, far = _cubic_table(np.float32(-0.5 if half_pixel else -0.75))
    taps = []
    for i in range(size_out):
        src = ((np.float32(i) + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel
               else np.float32(i) * scale)
        base = int(np.floor(src))
        offset = int(np.rint((src - np.float32(base)) * 1024))
        weights = [far[offset], near[offset], near[1024 - offset], far[1024 - offset]]
        index = [min(max(base - 1 + k, 0), size_in - 1) for k in range(4)]
        if half_pixel:
            weights = [w if index[k] == base - 1 + k else np.float32(0)
                       for k, w in enumerate(weights)]
            total = np.float32(sum(weights))
            weights = [w / total for w in weights]
        taps.append((index, weights))
    return taps


def resize_bicubic(images, size, align_corners=False, half_pixel=False):
    _, h, w, _ = images.shape
    ys = _cubic_axis(size[0], h, _scale(h, size[0], align_corners), half_pixel)
    xs = _cubic_axis(size[1], w, _scale(w, size[1], align_corners), half_pixel)
    x = images.astype(np.float64)
    out = np.zeros((images.shape[0], size[0], size[1], images.shape[3]))
    for i, (yi, yw) in enumerate(ys):
        for j, (xi, xw) in enumerate(xs):
            patch = x[:, yi][:, :, xi]  # [batch, 4, 4, channels]
            out[:, i, j] = np.einsum("byxc,y,x->bc", patch, np.float64(yw), np.float64(xw))
    return out.astype(np.float32)


def resize_area(images, size, align_corners=False):
    _, h, w, _ = images.shape

    def axis_weights(size_out, size_in):
        scale = _scale(size_in, size_out, align_corners)
        weights = np.zeros((size_out, size_in))
        for i in range(size_out):
            lo, hi = np.float32(i) * scale, np.float32(i + 1) * scale
            for cell in range(int(np.floor(lo)), int(np.ceil(hi))):
                covered = min(cell + 1, hi) - max(cell, lo)
                weights[i, min(cell, size_in - 1)] += covered
        return weights / scale

    wy, wx = axis_weights(size[0], h), axis_weights(size[1], w)
    return np.einsum("yh,xw,bhwc->byxc", wy, wx, images.astype(np.float64)).astype(np.float32)


def _bilinear(images, size, align_corners=False, half_pixel=False):
    from op_cases_image import _bilinear as reference
    return reference(images, size, align_corners, half_pixel)


def _nearest(images, size, align_corners=False, half_pixel=False):
    _, h, w, _ = images.shape
    out = []
    for size_in, size_out in ((h, size[0]), (w, size[1])):
        scale = _scale(size_in, size_out, align_corners)
        src = np.arange(size_out, dtype=np.float32)
        src = (src + np.float32(0.5)) * scale if half_pixel else src * scale
        picked = np.floor(src + np.float32(0.5)) if align_corners else np.floor(src)  # roundf
        out.append(np.clip(picked.astype(int), 0, size_in - 1))
    return images[:, out[0]][:, :, out[1]]


def draw_boxes(images, boxes, colors=None):
    table = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1],
                      [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1],
                      [1, 0, 1, 1]], np.float32) if colors is None else colors
    out = images.copy()
    _, h, w, depth = images.shape
    for b in range(len(images)):
        for i, box in enumerate(boxes[b]):
            color = table[i % len(table)][:depth]
            top, left = int(np.float32(box[0]) * np.float32(h - 1)), \
                int(np.float32(box[1]) * np.float32(w - 1))
            bottom, right = int(np.float32(box[2]) * np.float32(h - 1)), \
                int(np.float32(box[3]) * np.float32(w - 1))
            if top > bottom or left > right or top >= h or bottom < 0 or left >= w or right < 0:
                continue
            cols = range(max(left, 0), min(right, w - 1) + 1)
            rows = range(max(top, 0), min(bottom, h - 1) + 1)
            for x in cols:
                if top >= 0:
                    out[b, top, x] = color
                if bottom < h:
                    out[b, bottom, x] = color
            for y in rows:
                if left >= 0:
                    out[b, y, left] = color
                if right < w:
                    out[b, y, right] = color
    return out


# A 3-frame GIF (4 x 5, 8-colour palette) whose later frames are sub-rectangles with a
# transparent colour, written by Pillow; FRAMES is what TensorFlow 2.21 decodes from it.
GIF = base64.b64decode(
    "R0lGODlhBQAEAIIAAAAAAP8AAAD/AAAA////AAoUHshkMv///yH/C05FVFNDQVBFMi4wAwEAAAAh+QQACgAAACwA"
    "AAAABQAEAAAIEgABBBAwgEABAwcEEjSIUOGAgAAh+QQBCgAIACwBAAEAAwACAIIAAAD/AAAA/wAAAP///wAKFB7I"
    "ZDL///8ICQADCBhg4ACAgAAh+QQBCgAIACwAAAAAAQABAIIAAAD/AAAA/wAAAP///wAKFB7IZDL///8IBAAPBAQA"
    "Ow==")
PALETTE = np.array([[0, 0, 0], [255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0],
                    [10, 20, 30], [200, 100, 50], [255, 255, 255]], np.uint8)
_INDICES = np.arange(20).reshape(4, 5) % 8
_SECOND = _INDICES.copy()
_SECOND[1:3, 1:4] = (_SECOND[1:3, 1:4] + 3) % 8
_THIRD = _SECOND.copy()
_THIRD[0, 0] = 7
FRAMES = PALETTE[np.stack([_INDICES, _SECOND, _THIRD])]

GRADS = RNG.uniform(-1, 1, (4, 4, 3, 3)).astype(np.float32)
SMALL = RNG.uniform(0, 1, (1, 3, 4, 2)).astype(np.float32)
RESIZE_GRADS = RNG.uniform(-1, 1, (1, 5, 3, 2)).astype(np.float32)

CASES = [
    Case("CropAndResize", [IMAGE, BOXES, BOX_IND, CROP], crop_and_resize, rtol=1e-5, atol=1e-6),
    Case("CropAndResize", [IMAGE, BOXES, BOX_IND, np.array([1, 2], np.int32)],
         lambda i, b, n, s: crop_and_resize(i, b, n, s, "nearest", -1.0),
         attrs={"method": "nearest", "extrapolation_value": -1.0}),
    Case("CropAndResizeGradImage", [GRADS, BOXES, BOX_IND, np.array(IMAGE.shape, np.int32)],
         lambda g, b, n, s: adjoint(lambda x: crop_and_resize(x, b, n, CROP), IMAGE.shape, g),
         attrs={"T": tf.float32}, rtol=1e-5, atol=1e-5),
    Case("CropAndResizeGradBoxes", [GRADS, IMAGE, BOXES, BOX_IND], lambda *a: _box_gradient(*a),
         rtol=1e-4, atol=1e-4),
    Case("ResizeBilinearGrad", [RESIZE_GRADS, SMALL],
         lambda g, x: adjoint(lambda v: _bilinear(v, (5, 3)), SMALL.shape, g),
         rtol=1e-5, atol=1e-6),
    Case("ResizeBilinearGrad", [RESIZE_GRADS, SMALL],
         lambda g, x: adjoint(lambda v: _bilinear(v, (5, 3), half_pixel=True), SMALL.shape, g),
         attrs={"half_pixel_centers": True}, rtol=1e-5, atol=1e-6),
    Case("ResizeNearestNeighborGrad", [RESIZE_GRADS, np.array([3, 4], np.int32)],
         lambda g, s: adjoint(lambda v: _nearest(v, (5, 3)), SMALL.shape, g),
         rtol=1e-5, atol=1e-6),
    Case("ResizeNearestNeighborGrad", [RESIZE_GRADS, np.array([3, 4], np.int32)],
         lambda g, s: adjoint(lambda v: _nearest(v, (5, 3), align_corners=True), SMALL.shape, g),
         attrs={"align_corners": True}, rtol=1e-5, atol=1e-6),
    Case("ResizeBicubic", [IMAGE, np.array([9, 4], np.int32)],
         lambda x, s: resize_bicubic(x, s), rtol=1e-5, atol=1e-5),
    Case("ResizeBicubic", [IMAGE, np.array([3, 11], np.int32)],
         lambda x, s: resize_bicubic(x, s, half_pixel=True), rtol=1e-5, atol=1e-5,
         attrs={"half_pixel_centers": True}),
    Case("ResizeBicubic", [IMAGE, np.array([7, 8], np.int32)],
         lambda x, s: resize_bicubic(x, s, align_corners=True), rtol=1e-5, atol=1e-5,
         attrs={"align_corners": True}),
    Case("ResizeBicubicGrad", [RESIZE_GRADS, SMALL],
         lambda g, x: adjoint(lambda v: resize_bicubic(v, (5, 3)), SMALL.shape, g),
         rtol=1e-5, atol=1e-5),
    Case("ResizeArea", [IMAGE, np.array([3, 4], np.int32)],
         lambda x, s: resize_area(x, s), rtol=1e-5, atol=1e-5),
    Case("ResizeArea", [IMAGE, np.array([7, 9], np.int32)],
         lambda x, s: resize_area(x, s), rtol=1e-5, atol=1e-5),
    # area_range [1, 1] with the image's own aspect ratio leaves one crop: the whole image.
    Case("SampleDistortedBoundingBoxV2",
         [np.array([10, 10, 3], np.int32), np.array([[[0.1, 0.1, 0.5, 0.5]]], np.float32),
          np.array(0.1, np.float32)],
         lambda *a: (np.array([0, 0, 0], np.int32), np.array([10, 10, -1], np.int32),
                     np.array([[[0, 0, 1, 1]]], np.float32)),
         attrs={"seed": 1, "seed2": 2, "area_range": [1.0, 1.0],
                "aspect_ratio_range": [1.0, 1.0]}, outputs=3),
    Case("SampleDistortedBoundingBox",
         [np.array([8, 6, 1], np.int64), np.zeros((1, 0, 4), np.float32)],
         lambda *a: (np.array([0, 0, 0], np.int64), np.array([8, 6, -1], np.int64),
                     np.array([[[0, 0, 1, 1]]], np.float32)),
         attrs={"seed": 3, "area_range": [1.0, 1.0], "aspect_ratio_range": [0.75, 0.75],
                "use_image_if_no_bounding_boxes": True}, outputs=3),
    Case("DrawBoundingBoxes",
         [IMAGE, np.array([[[0.1, 0.1, 0.7, 0.9], [-0.5, 0.3, 0.5, 1.2]],
                           [[0.0, 0.0, 1.0, 1.0], [0.6, 0.6, 0.2, 0.2]]], np.float32)],
         draw_boxes),
    Case("DrawBoundingBoxesV2",
         [IMAGE[..., :1], np.array([[[0.2, 0.0, 0.6, 0.5]], [[0.3, 0.2, 0.9, 0.7]]], np.float32),
          np.array([[0.25, 0.5, 0.75, 1.0], [1, 1, 1, 1]], np.float32)],
         lambda i, b, c: draw_boxes(i, b, c)),
    Case("DecodeGif", [np.array(GIF, dtype=object)], lambda c: FRAMES),
]


def _box_gradient(grads, image, boxes, box_ind):
    """TensorFlow's CropAndResizeGradBoxes: each bilinear sample's derivative along y and x
    (from its four neighbours, zero where the sample sits on a pixel row or column), times how
    the sample moves with each box coordinate."""
    f = np.float32
    _, height, width, _ = image.shape
    ch, cw = grads.shape[1:3]
    out = np.zeros(boxes.shape, np.float32)
    ratio_y = f(height - 1) / f(ch - 1) if ch > 1 else f(0)
    ratio_x = f(width - 1) / f(cw - 1) if cw > 1 else f(0)
    for b, box in enumerate(boxes):
        img = image[box_ind[b]].astype(np.float32)
        for y in range(ch):
            in_y = box[0] * f(height - 1) + f(y) * ((box[2] - box[0]) * f(height - 1) / f(ch - 1))
            if not 0 <= in_y <= height - 1:
                continue
            top, bottom = int(np.floor(in_y)), int(np.ceil(in_y))
            dy = f(in_y - top)
            for x in range(cw):
                in_x = box[1] * f(width - 1) + f(x) * ((box[3] - box[1]) * f(width - 1) /
                                                       f(cw - 1))
                if not 0 <= in_x <= width - 1:
                    continue
                left, right = int(np.floor(in_x)), int(np.ceil(in_x))
                dx = f(in_x - left)
                tl, tr, bl, br = img[top, left], img[top, right], img[bottom, left], \
                    img[bottom, right]
                grad_y = grads[b, y, x] * ((1 - dx) * (bl - tl) + dx * (br - tr))
                grad_x = grads[b, y, x] * ((1 - dy) * (tr - tl) + dy * (br - bl))
                out[b, 0] += np.sum(grad_y * (f(height - 1) - f(y) * ratio_y))
                out[b, 2] += np.sum(grad_y * (f(y) * ratio_y))
                out[b, 1] += np.sum(grad_x * (f(width - 1) - f(x) * ratio_x))
                out[b, 3] += np.sum(grad_x * (f(x) * ratio_x))
    return out


# --- codecs -------------------------------------------------------------------------------------


def bmp(image, bits=24, top_down=False):
    """A BMP file of `image` ([h, w, 1 | 3 | 4] uint8): BGR(A) rows padded to 4 bytes."""
    height, width, channels = image.shape
    row = (channels * width + 3) // 4 * 4
    pixels = image[..., [2, 1, 0, 3][:channels]] if channels > 1 else image
    rows = [np.pad(r.reshape(-1), (0, row - channels * width)).tobytes()
            for r in (pixels if top_down else pixels[::-1])]
    body = b"".join(rows)
    info = np.array([40, width, -height if top_down else height], np.int32).tobytes() + \
        np.array([1, bits], np.int16).tobytes() + np.zeros(6, np.int32).tobytes()
    header = b"BM" + np.array([54 + len(body), 0, 54], np.int32).tobytes()
    return header + info + body


BMP_IMAGE = RNG.integers(0, 256, (3, 5, 3), dtype=np.uint8)
BMP_RGBA = RNG.integers(0, 256, (4, 3, 4), dtype=np.uint8)
BMP_GREY = RNG.integers(0, 256, (2, 7, 1), dtype=np.uint8)
JPEG_SOURCE = (np.full((16, 24, 3), 100) + np.arange(24)[None, :, None] * 4).astype(np.uint8)


def _image_ops():
    from flowstone.ops import image_ops
    return image_ops


def _composites():
    from flowstone.ops import image_composites
    return image_composites


# --- non-maximum suppression ----------------------------------------------------------------


def iou(a, b):
    a = [min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])]
    b = [min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])]
    area_a, area_b = (a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])
    if area_a <= 0 or area_b <= 0:
        return 0.0
    inter = max(min(a[2], b[2]) - max(a[0], b[0]), 0) * max(min(a[3], b[3]) - max(a[1], b[1]), 0)
    return inter / (area_a + area_b - inter)


def greedy(similarity, scores, max_output, threshold, score_threshold, sigma=0.0):
    """Soft-NMS as Bodla et al. describe it, with hard suppression above `threshold`."""
    scale = -0.5 / sigma if sigma > 0 else 0.0
    candidates = [[float(s), i, 0] for i, s in enumerate(scores) if s > score_threshold]
    kept, kept_scores = [], []
    while candidates and len(kept) < max_output:
        candidates.sort(key=lambda c: (-c[0], c[1]))
        score, index, checked = candidates.pop(0)
        original, dropped = score, False
        for j in range(len(kept) - 1, checked - 1, -1):
            s = similarity(index, kept[j])
            if s > threshold:
                dropped = True
                break
            score *= np.float32(np.exp(scale * s * s))
            if score <= score_threshold:
                break
        if dropped:
            continue
        if score == original:
            kept.append(index)
            kept_scores.append(score)
        elif score > score_threshold:
            candidates.append([score, index, len(kept)])
    return kept, kept_scores


NMS_BOXES = RNG.uniform(0, 1, (12, 4)).astype(np.float32)
NMS_BOXES[:, 2:] = NMS_BOXES[:, :2] + RNG.uniform(0.2, 0.5, (12, 2)).astype(np.float32)
NMS_SCORES = RNG.permutation(np.linspace(0.05, 0.95, 12)).astype(np.float32)
OVERLAPS = RNG.uniform(0, 1, (8, 8)).astype(np.float32)


def _v5(boxes, scores, max_output, threshold, score_threshold, sigma, pad):
    kept, kept_scores = greedy(lambda i, j: iou(boxes[i], boxes[j]), scores, int(max_output),
                               float(threshold), float(score_threshold), float(sigma))
    length = int(max_output) if pad else len(kept)
    indices = np.zeros(length, np.int32)
    values = np.zeros(length, np.float32)
    indices[:len(kept)], values[:len(kept)] = kept, kept_scores
    return indices, values, np.array(len(kept), np.int32)


def combined(boxes, scores, per_class, total, threshold, score_threshold, pad_per_class=False,
             clip=True):
    batch, num_boxes, q, _ = boxes.shape
    classes = scores.shape[2]
    detections = min(per_class * classes, total) if pad_per_class else total
    out_boxes = np.zeros((batch, detections, 4), np.float32)
    out_scores = np.zeros((batch, detections), np.float32)
    out_classes = np.zeros((batch, detections), np.float32)
    valid = np.zeros(batch, np.int32)
    for b in range(batch):
        kept = []
        for c in range(classes):
            class_boxes = boxes[b, :, 0 if q == 1 else c]
            indices, values = greedy(lambda i, j: iou(class_boxes[i], class_boxes[j]),
                                     scores[b, :, c], per_class, threshold, score_threshold)
            kept += [(v, c, class_boxes[i]) for i, v in zip(indices, values)]
        kept.sort(key=lambda k: -k[0])  # stable: lower class first among equal scores
        kept = kept[:detections]
        for k, (v, c, box) in enumerate(kept):
            out_boxes[b, k] = np.clip(box, 0, 1) if clip else box
            out_scores[b, k], out_classes[b, k] = v, c
        valid[b] = len(kept)
    return out_boxes, out_scores, out_classes, valid


COMBINED_BOXES = RNG.uniform(-0.1, 0.8, (2, 6, 3, 4)).astype(np.float32)
COMBINED_BOXES[..., 2:] = COMBINED_BOXES[..., :2] + 0.3
COMBINED_SCORES = RNG.uniform(0, 1, (2, 6, 3)).astype(np.float32)

CASES += [
    Case("DecodeBmp", [np.array(bmp(BMP_IMAGE), dtype=object)], lambda c: BMP_IMAGE),
    Case("DecodeBmp", [np.array(bmp(BMP_RGBA, 32, top_down=True), dtype=object)],
         lambda c: BMP_RGBA, attrs={"channels": 4}),
    Case("DecodeBmp", [np.array(bmp(BMP_GREY, 8), dtype=object)], lambda c: BMP_GREY),
    Case("ExtractJpegShape", [JPEG_SOURCE], lambda x: np.array([16, 24, 3], np.int64),
         build=lambda x: _composites().extract_jpeg_shape(_image_ops().encode_jpeg(x),
                                                          output_type=tf.int64).op),
    Case("DecodeAndCropJpeg", [JPEG_SOURCE], lambda x: x[3:11, 5:22], atol=4,
         build=lambda x: _composites().decode_and_crop_jpeg(
             _image_ops().encode_jpeg(x, quality=100), [3, 5, 8, 17],
             dct_method="INTEGER_ACCURATE").op),
    Case("EncodeJpegVariableQuality", [JPEG_SOURCE], lambda x: x, atol=4,
         build=lambda x: _image_ops().decode_jpeg(apply_op(
             "EncodeJpegVariableQuality", [x, tf.constant(100)]).outputs[0]).op),
    Case("NonMaxSuppressionV5",
         [NMS_BOXES, NMS_SCORES, np.array(8, np.int32), np.array(0.6, np.float32),
          np.array(0.1, np.float32), np.array(0.5, np.float32)],
         lambda *a: _v5(*a, pad=False), outputs=3, rtol=1e-5, atol=1e-6),
    Case("NonMaxSuppressionV5",
         [NMS_BOXES, NMS_SCORES, np.array(10, np.int32), np.array(0.4, np.float32),
          np.array(0.0, np.float32), np.array(0.0, np.float32)],
         lambda *a: _v5(*a, pad=True), attrs={"pad_to_max_output_size": True}, outputs=3),
    Case("NonMaxSuppressionWithOverlaps",
         [OVERLAPS, NMS_SCORES[:8], np.array(5, np.int32), np.array(0.7, np.float32),
          np.array(0.2, np.float32)],
         lambda o, s, m, t, st: np.array(greedy(lambda i, j: o[i, j], s, int(m), float(t),
                                                float(st))[0], np.int32)),
    Case("CombinedNonMaxSuppression",
         [COMBINED_BOXES, COMBINED_SCORES, np.array(3, np.int32), np.array(5, np.int32),
          np.array(0.5, np.float32), np.array(0.2, np.float32)],
         lambda b, s, p, t, i, st: combined(b, s, int(p), int(t), float(i), float(st)),
         outputs=4),
    Case("CombinedNonMaxSuppression",
         [COMBINED_BOXES[:, :, :1], COMBINED_SCORES, np.array(2, np.int32),
          np.array(20, np.int32), np.array(0.3, np.float32), np.array(0.0, np.float32)],
         lambda b, s, p, t, i, st: combined(b, s, int(p), int(t), float(i), float(st), True,
                                            False),
         attrs={"pad_per_class": True, "clip_boxes": False}, outputs=4),
]


# --- glimpses -------------------------------------------------------------------------------


def glimpse(images, size, offsets, centered, normalized, v1):
    """TensorFlow's window placement (see glimpse_ops.cc), zero noise."""
    f = np.float32
    batch, height, width, channels = images.shape
    out = np.zeros((batch, size[0], size[1], channels), np.float32)
    for b in range(batch):
        corner = []
        for position, extent, window in ((offsets[b, 0], height, size[0]),
                                         (offsets[b, 1], width, size[1])):
            position, extent, half = f(position), f(extent), f(window) / f(2)
            if normalized:
                position = position * extent
            if v1:
                if centered:
                    position = position / f(2) + extent / f(2)
                position = position - half
            elif normalized and centered:
                position = position / f(2) + extent / f(2) - half
            elif centered:
                position = position + extent / f(2)
            corner.append(int(position))  # toward zero
        for y in range(size[0]):
            for x in range(size[1]):
                sy, sx = corner[0] + y, corner[1] + x
                if 0 <= sy < height and 0 <= sx < width:
                    out[b, y, x] = images[b, sy, sx]
    return out


GLIMPSE_IMAGES = RNG.uniform(0, 1, (3, 7, 9, 2)).astype(np.float32)
GLIMPSE_OFFSETS = {True: np.array([[0.3, -0.2], [-0.9, 0.7], [0.05, 0.1]], np.float32),
                   False: np.array([[1.0, -2.0], [3.0, 4.5], [6.5, 8.0]], np.float32)}

for _v1 in (True, False):
    for _centered in (True, False):
        for _normalized in (True, False):
            _offsets = GLIMPSE_OFFSETS[_normalized] if _centered or not _normalized else \
                np.abs(GLIMPSE_OFFSETS[True])
            CASES.append(Case(
                "ExtractGlimpse" if _v1 else "ExtractGlimpseV2",
                [GLIMPSE_IMAGES, np.array([4, 5], np.int32), _offsets],
                lambda x, s, o, c=_centered, n=_normalized, v=_v1: glimpse(x, s, o, c, n, v),
                attrs={"centered": _centered, "normalized": _normalized,
                       "uniform_noise": False, "noise": "zero"}))
