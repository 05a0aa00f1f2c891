"""tf.image's crops, pads, rotations, dtype conversion and the (random) distortions input
pipelines put in their map functions.

These build the same graph ops as TensorFlow's own Python functions do (ReverseV2, Slice, Pad,
RandomUniform with TF's seeds, arithmetic), so a graph imported from TensorFlow holds the ops
Flowstone runs, and a random flip or brightness draws from the RandomUniform op like any other.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import (array_ops, basic_ops, control_flow_ops, image_ops, math_ops, random_ops,
                           reduction_ops)
from flowstone.util.tf_export import tf_export


def _image(image, name="image"):
    image = _ops.convert_to_tensor(image, name=name)
    if image.shape.ndims not in (None, 3, 4):
        raise ValueError(f"'image' (shape {image.shape}) must have either 3 or 4 dimensions.")
    return image


def _hw_axes(image):
    """The height and width axes (and whether `image` is a batch)."""
    batched = image.shape.ndims == 4
    return (1, 2) if batched else (0, 1)


# --- dtype conversion -------------------------------------------------------------------------


@tf_export("image.convert_image_dtype")
def convert_image_dtype(image, dtype, saturate=False, name=None):
    """`image` in `dtype`, rescaled as TensorFlow does: floats span [0, 1], integers [0, max]
    (integer to integer by a power-of-two scale, float to integer rounded by +0.5)."""
    image = _ops.convert_to_tensor(image, name="image")
    dtype = _dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer) or not (image.dtype.is_floating or
                                                           image.dtype.is_integer):
        raise AttributeError("dtype must be either floating point or integer")
    if dtype == image.dtype:
        return basic_ops.identity(image, name=name)
    with _ops.name_scope(name or "convert_image"):
        if image.dtype.is_integer and dtype.is_integer:
            scale_in, scale_out = image.dtype.max + 1, dtype.max + 1
            if scale_in > scale_out:
                scaled = math_ops.floordiv(image, _ops.constant(scale_in // scale_out,
                                                                dtype=image.dtype))
                return math_ops.cast(scaled, dtype)
            return math_ops.multiply(math_ops.cast(image, dtype),
                                     _ops.constant(scale_out // scale_in, dtype=dtype))
        if image.dtype.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype)
        if image.dtype.is_integer:
            return math_ops.multiply(math_ops.cast(image, dtype),
                                     _ops.constant(1.0 / image.dtype.max, dtype=dtype))
        scaled = math_ops.multiply(image, _ops.constant(dtype.max + 0.5, dtype=image.dtype))
        if saturate:
            scaled = math_ops.minimum(math_ops.maximum(
                scaled, _ops.constant(float(dtype.min), dtype=image.dtype)),
                _ops.constant(float(dtype.max), dtype=image.dtype))
        return math_ops.cast(scaled, dtype)


def _as_float(image):
    return image if image.dtype in (_dtypes.float16, _dtypes.float32) else \
        convert_image_dtype(image, _dtypes.float32)


# --- flips and rotations ----------------------------------------------------------------------


def _random_flip(image, axis, seed, name):
    image = _image(image)
    with _ops.name_scope(name):
        if image.shape.ndims == 4:
            # One draw per image of the batch, as TensorFlow's.
            batch = array_ops.shape(image)[:1]
            draws = random_ops.random_uniform(batch, 0, 1.0, seed=seed)
            flips = array_ops.reshape(math_ops.less(draws, 0.5), [-1, 1, 1, 1])
            flipped = image_ops._flip(image, axis, "flip")
            return math_ops.where_v2(flips, flipped, image)
        draw = random_ops.random_uniform([], 0, 1.0, seed=seed)
        return control_flow_ops.cond(math_ops.less(draw, 0.5),
                                     lambda: image_ops._flip(image, axis, "flip"),
                                     lambda: image)


@tf_export("image.random_flip_left_right")
def random_flip_left_right(image, seed=None):
    """`image` mirrored left to right with probability 1/2 (each image of a batch)."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


@tf_export("image.random_flip_up_down")
def random_flip_up_down(image, seed=None):
    """`image` mirrored top to bottom with probability 1/2 (each image of a batch)."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


@tf_export("image.rot90")
def rot90(image, k=1, name=None):
    """`image` rotated counter-clockwise by k * 90 degrees (k a Python int or a scalar
    tensor)."""
    image = _image(image)
    batched = image.shape.ndims == 4
    perm = [0, 2, 1, 3] if batched else [1, 0, 2]

    def rotate(turns):
        if turns == 1:
            return image_ops._flip(array_ops.transpose(image, perm), 0, "flip_up_down")
        if turns == 2:
            return image_ops._flip(image_ops._flip(image, 0, "flip_up_down"), 1,
                                   "flip_left_right")
        if turns == 3:
            return image_ops._flip(array_ops.transpose(image, perm), 1, "flip_left_right")
        return image

    with _ops.name_scope(name or "rot90"):
        if isinstance(k, int):
            return rotate(k % 4)
        k = math_ops.floormod(_ops.convert_to_tensor(k, dtype=_dtypes.int32, name="k"), 4)
        return control_flow_ops.case(
            [(math_ops.equal(k, t), (lambda t=t: rotate(t))) for t in (1, 2, 3)],
            default=lambda: image, exclusive=True)


# --- crops and pads ---------------------------------------------------------------------------


def _dims(image):
    """(height, width) of `image` as int32 scalars (static where known)."""
    h_axis, w_axis = _hw_axes(image)
    shape = array_ops.shape(image)
    return shape[h_axis], shape[w_axis]


@tf_export("image.crop_to_bounding_box")
def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The [target_height, target_width] box of `image` from (offset_height, offset_width)."""
    image = _image(image)
    with _ops.name_scope("crop_to_bounding_box"):
        batched = image.shape.ndims == 4
        begin = [offset_height, offset_width, 0]
        size = [target_height, target_width, -1]
        if batched:
            begin, size = [0] + begin, [-1] + size
        return array_ops.slice(image, array_ops.stack(begin), array_ops.stack(size))


@tf_export("image.pad_to_bounding_box")
def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """`image` inside a [target_height, target_width] box of zeros at (offset_height,
    offset_width)."""
    image = _image(image)
    with _ops.name_scope("pad_to_bounding_box"):
        height, width = _dims(image)
        after_h = math_ops.subtract(math_ops.subtract(target_height, offset_height), height)
        after_w = math_ops.subtract(math_ops.subtract(target_width, offset_width), width)
        paddings = [[offset_height, after_h], [offset_width, after_w], [0, 0]]
        if image.shape.ndims == 4:
            paddings = [[0, 0]] + paddings
        paddings = array_ops.stack([array_ops.stack(p) for p in paddings])
        return array_ops.pad(image, paddings)


@tf_export("image.resize_with_crop_or_pad", "image.resize_image_with_crop_or_pad")
def resize_with_crop_or_pad(image, target_height, target_width):
    """`image` centrally cropped or padded with zeros to [target_height, target_width]."""
    image = _image(image)
    with _ops.name_scope("resize_image_with_crop_or_pad"):
        height, width = _dims(image)
        diff_h = math_ops.subtract(target_height, height)
        diff_w = math_ops.subtract(target_width, width)
        zero = _ops.constant(0)
        two = _ops.constant(2)
        crop_h = math_ops.maximum(math_ops.floordiv(math_ops.negative(diff_h), two), zero)
        crop_w = math_ops.maximum(math_ops.floordiv(math_ops.negative(diff_w), two), zero)
        pad_h = math_ops.maximum(math_ops.floordiv(diff_h, two), zero)
        pad_w = math_ops.maximum(math_ops.floordiv(diff_w, two), zero)
        cropped = crop_to_bounding_box(image, crop_h, crop_w,
                                       math_ops.minimum(target_height, height),
                                       math_ops.minimum(target_width, width))
        result = pad_to_bounding_box(cropped, pad_h, pad_w, target_height, target_width)
        if isinstance(target_height, int) and isinstance(target_width, int):
            shape = [target_height, target_width, image.shape[-1]]
            result.set_shape(image.shape[:1].concatenate(shape) if image.shape.ndims == 4
                             else shape)
        return result


@tf_export("image.central_crop")
def central_crop(image, central_fraction):
    """The central `central_fraction` (in (0, 1]) of `image`'s height and width."""
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    image = _image(image)
    if central_fraction == 1.0:
        return image
    with _ops.name_scope("central_crop"):
        height, width = _dims(image)

        def start(size):
            size_f = math_ops.cast(size, _dtypes.float64)
            offset = math_ops.realdiv(math_ops.subtract(
                size_f, math_ops.multiply(size_f, _ops.constant(central_fraction, _dtypes.float64))),
                _ops.constant(2.0, _dtypes.float64))
            return math_ops.cast(offset, _dtypes.int32)

        start_h, start_w = start(height), start(width)
        return crop_to_bounding_box(
            image, start_h, start_w,
            math_ops.subtract(height, math_ops.multiply(start_h, _ops.constant(2))),
            math_ops.subtract(width, math_ops.multiply(start_w, _ops.constant(2))))


# --- brightness, contrast, standardization ----------------------------------------------------


@tf_export("image.adjust_brightness")
def adjust_brightness(image, delta):
    """`image` + delta, computed in float and converted back (saturating) to image's dtype."""
    image = _ops.convert_to_tensor(image, name="image")
    with _ops.name_scope("adjust_brightness"):
        flt = _as_float(image)
        adjusted = math_ops.add(flt, math_ops.cast(delta, flt.dtype), name="adjusted")
        return convert_image_dtype(adjusted, image.dtype, saturate=True)


@tf_export("image.random_brightness")
def random_brightness(image, max_delta, seed=None):
    """adjust_brightness by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


@tf_export("image.adjust_contrast")
def adjust_contrast(images, contrast_factor):
    """(x - mean) * contrast_factor + mean, the mean per channel over each image's height and
    width (the AdjustContrastv2 op), computed in float32 and converted back (saturating) to the
    images' dtype."""
    images = _image(images, "images")
    with _ops.name_scope("adjust_contrast"):
        flt = images if images.dtype == _dtypes.float32 else \
            convert_image_dtype(images, _dtypes.float32)
        factor = _ops.convert_to_tensor(contrast_factor, dtype=_dtypes.float32,
                                        name="contrast_factor")
        adjusted = _ops.apply_op("AdjustContrastv2", [flt, factor],
                                 name="AdjustContrastv2").outputs[0]
        return convert_image_dtype(adjusted, images.dtype, saturate=True)


@tf_export("image.random_contrast")
def random_contrast(image, lower, upper, seed=None):
    """adjust_contrast by a factor drawn uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_ops.random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


@tf_export("image.per_image_standardization")
def per_image_standardization(image):
    """(x - mean) / max(stddev, 1 / sqrt(number of values)) of each image, in float32."""
    image = _image(image)
    with _ops.name_scope("per_image_standardization"):
        if image.dtype != _dtypes.float32 and image.dtype != _dtypes.float16:
            image = math_ops.cast(image, _dtypes.float32)
        shape = array_ops.shape(image)
        count = reduction_ops.reduce_prod(shape[-3:])
        axes = [-1, -2, -3]
        mean = reduction_ops.reduce_mean(image, axis=axes, keepdims=True)
        centered = math_ops.subtract(image, mean)
        variance = reduction_ops.reduce_mean(math_ops.square(centered), axis=axes, keepdims=True)
        min_stddev = math_ops.rsqrt(math_ops.cast(count, image.dtype))
        stddev = math_ops.maximum(math_ops.sqrt(variance), min_stddev)
        return math_ops.realdiv(centered, stddev)



# --- colour -----------------------------------------------------------------------------------


def _color_op(op_type, images, scalar=None, scalar_name=None):
    """The colour op `op_type` on float32 RGB (or HSV) images, other dtypes converted around it
    as TensorFlow does."""
    images = _ops.convert_to_tensor(images, name="images")
    flt = images if images.dtype == _dtypes.float32 else \
        convert_image_dtype(images, _dtypes.float32)
    inputs = [flt]
    if scalar is not None:
        inputs.append(_ops.convert_to_tensor(scalar, dtype=_dtypes.float32, name=scalar_name))
    out = _ops.apply_op(op_type, inputs, name=op_type).outputs[0]
    return out if images.dtype == _dtypes.float32 else \
        convert_image_dtype(out, images.dtype, saturate=True)


@tf_export("image.rgb_to_hsv")
def rgb_to_hsv(images, name=None):
    """Hue, saturation and value (each in [0, 1]) of float RGB images in [0, 1]."""
    with _ops.name_scope(name or "rgb_to_hsv"):
        return _ops.apply_op("RGBToHSV", [_ops.convert_to_tensor(images, name="images")],
                             name="RGBToHSV").outputs[0]


@tf_export("image.hsv_to_rgb")
def hsv_to_rgb(images, name=None):
    """RGB images of float hue, saturation and value images."""
    with _ops.name_scope(name or "hsv_to_rgb"):
        return _ops.apply_op("HSVToRGB", [_ops.convert_to_tensor(images, name="images")],
                             name="HSVToRGB").outputs[0]


@tf_export("image.adjust_hue")
def adjust_hue(image, delta, name=None):
    """`image` with `delta` (in [-1, 1]) added to the hue of every pixel."""
    with _ops.name_scope(name or "adjust_hue"):
        return _color_op("AdjustHue", image, delta, "delta")


@tf_export("image.adjust_saturation")
def adjust_saturation(image, saturation_factor, name=None):
    """`image` with the saturation of every pixel multiplied by `saturation_factor`."""
    with _ops.name_scope(name or "adjust_saturation"):
        return _color_op("AdjustSaturation", image, saturation_factor, "scale")


@tf_export("image.random_hue")
def random_hue(image, max_delta, seed=None):
    """adjust_hue by a delta drawn uniformly from [-max_delta, max_delta) (max_delta <= 0.5)."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_hue(image, delta)


@tf_export("image.random_saturation")
def random_saturation(image, lower, upper, seed=None):
    """adjust_saturation by a factor drawn uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_ops.random_uniform([], lower, upper, seed=seed)
    return adjust_saturation(image, factor)


@tf_export("image.rgb_to_grayscale")
def rgb_to_grayscale(images, name=None):
    """[..., 1] luma of RGB images: 0.2989 R + 0.5870 G + 0.1140 B, in the images' dtype."""
    images = _ops.convert_to_tensor(images, name="images")
    with _ops.name_scope(name or "rgb_to_grayscale"):
        flt = convert_image_dtype(images, _dtypes.float32)
        weights = _ops.constant([0.2989, 0.5870, 0.1140], dtype=_dtypes.float32)
        gray = reduction_ops.reduce_sum(math_ops.multiply(flt, weights), axis=[-1],
                                        keepdims=True)
        return convert_image_dtype(gray, images.dtype)
