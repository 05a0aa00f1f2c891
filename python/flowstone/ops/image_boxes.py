"""tf.image's box and window ops over the C++ kernels of src/ops/image: crop_and_resize,
sample_distorted_bounding_box, draw_bounding_boxes and extract_glimpse (TF1's signatures)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import random_ops
from flowstone.util.tf_export import tf_export


@tf_export("image.crop_and_resize")
def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method="bilinear",
                    extrapolation_value=0, name=None, box_indices=None):
    """Crops of `boxes` ([y1, x1, y2, x2], normalized) of the images `box_ind` names, each
    resized to `crop_size` ([crop_height, crop_width]): [num_boxes, crop_height, crop_width,
    depth] float32. Samples outside the image are `extrapolation_value`."""
    if box_ind is None:
        box_ind = box_indices
    if box_ind is None or crop_size is None:
        raise TypeError("crop_and_resize() needs box_ind (or box_indices) and crop_size")
    inputs = [_ops.convert_to_tensor(image, name="image"),
              _ops.convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes"),
              _ops.convert_to_tensor(box_ind, dtype=_dtypes.int32, name="box_ind"),
              _ops.convert_to_tensor(crop_size, dtype=_dtypes.int32, name="crop_size")]
    return _ops.apply_op("CropAndResize", inputs, {
        "method": method, "extrapolation_value": float(extrapolation_value)},
        name=name or "CropAndResize").outputs[0]


@tf_export("image.sample_distorted_bounding_box")
def sample_distorted_bounding_box(image_size, bounding_boxes, seed=None, seed2=None,
                                  min_object_covered=0.1, aspect_ratio_range=None,
                                  area_range=None, max_attempts=None,
                                  use_image_if_no_bounding_boxes=None, name=None):
    """A random crop of an image of `image_size` ([height, width, channels]) that covers at
    least `min_object_covered` of one of `bounding_boxes` ([batch, N, 4], normalized): (begin,
    size, bboxes) for tf.slice and draw_bounding_boxes. As TF1's, the graph seed is used only
    when `seed` is given; without it every session draws differently."""
    seed, seed2 = random_ops.get_seed(seed) if seed else (0, 0)
    attrs = {"seed": seed or 0, "seed2": seed2 or 0}
    for key, value in (("aspect_ratio_range", aspect_ratio_range), ("area_range", area_range)):
        if value is not None:
            attrs[key] = [float(v) for v in value]
    if max_attempts is not None:
        attrs["max_attempts"] = int(max_attempts)
    if use_image_if_no_bounding_boxes is not None:
        attrs["use_image_if_no_bounding_boxes"] = bool(use_image_if_no_bounding_boxes)
    image_size = _ops.convert_to_tensor(image_size, name="image_size")
    inputs = [image_size,
              _ops.convert_to_tensor(bounding_boxes, dtype=_dtypes.float32,
                                     name="bounding_boxes"),
              _ops.convert_to_tensor(min_object_covered, dtype=_dtypes.float32,
                                     name="min_object_covered")]
    with _ops.name_scope(name, "sample_distorted_bounding_box"):
        outputs = _ops.apply_op("SampleDistortedBoundingBoxV2", inputs, attrs).outputs
    return tuple(outputs)


@tf_export("image.draw_bounding_boxes")
def draw_bounding_boxes(images, boxes, name=None, colors=None):
    """`images` ([batch, height, width, depth] float) with the outline of each of `boxes`
    ([batch, N, 4], normalized) drawn, in `colors` ([num_colors, 4] RGBA rows, cycled) or
    TensorFlow's default palette."""
    inputs = [_ops.convert_to_tensor(images, name="images"),
              _ops.convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes")]
    if colors is None:
        return _ops.apply_op("DrawBoundingBoxes", inputs,
                             name=name or "DrawBoundingBoxes").outputs[0]
    inputs.append(_ops.convert_to_tensor(colors, dtype=_dtypes.float32, name="colors"))
    return _ops.apply_op("DrawBoundingBoxesV2", inputs,
                         name=name or "DrawBoundingBoxesV2").outputs[0]


@tf_export("image.extract_glimpse")
def extract_glimpse(input, size, offsets, centered=True, normalized=True,  # noqa: A002
                    uniform_noise=True, name=None):
    """[batch, size[0], size[1], channels] windows of the float images `input` centred at
    `offsets` ([batch, 2] (y, x): pixels, or normalized to [0, 1], or to [-1, 1] about the
    centre when `centered`), pixels outside an image filled with uniform noise over its range.
    TF1's op (ExtractGlimpse); as in TensorFlow its `noise` attr stays "uniform", so
    uniform_noise=False changes nothing."""
    inputs = [_ops.convert_to_tensor(input, dtype=_dtypes.float32, name="input"),
              _ops.convert_to_tensor(size, dtype=_dtypes.int32, name="size"),
              _ops.convert_to_tensor(offsets, dtype=_dtypes.float32, name="offsets")]
    return _ops.apply_op("ExtractGlimpse", inputs, {
        "centered": bool(centered), "normalized": bool(normalized),
        "uniform_noise": bool(uniform_noise)},
        name=name or "ExtractGlimpse").outputs[0]
