"""tf.image's codecs (over the C++ ops of src/ops/image: libjpeg-turbo, libpng and giflib),
flips and resizes."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export


def _contents(value):
    return _ops.convert_to_tensor(value, dtype=_dtypes.string, name="contents")


@tf_export("image.decode_jpeg", "io.decode_jpeg")
def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    return _ops.apply_op("DecodeJpeg", [_contents(contents)], {
        "channels": channels, "ratio": ratio, "fancy_upscaling": fancy_upscaling,
        "try_recover_truncated": try_recover_truncated,
        "acceptable_fraction": float(acceptable_fraction), "dct_method": dct_method,
    }, name=name or "DecodeJpeg").outputs[0]


@tf_export("image.decode_png", "io.decode_png")
def decode_png(contents, channels=0, dtype=_dtypes.uint8, name=None):
    return _ops.apply_op("DecodePng", [_contents(contents)], {
        "channels": channels, "dtype": _dtypes.as_dtype(dtype)},
        name=name or "DecodePng").outputs[0]


@tf_export("image.decode_gif", "io.decode_gif")
def decode_gif(contents, name=None):
    """Every frame of a GIF, [num_frames, height, width, 3] uint8."""
    return _ops.apply_op("DecodeGif", [_contents(contents)], name=name or "DecodeGif").outputs[0]


@tf_export("image.decode_image", "io.decode_image")
def decode_image(contents, channels=None, dtype=_dtypes.uint8, name=None, expand_animations=True):
    if _dtypes.as_dtype(dtype) != _dtypes.uint8:
        raise TypeError(f"decode_image decodes to uint8; got dtype {dtype!r} (convert the result "
                        "with tf.cast).")
    return _ops.apply_op("DecodeImage", [_contents(contents)], {
        "channels": channels or 0, "dtype": _dtypes.uint8,
        "expand_animations": expand_animations}, name=name or "decode_image").outputs[0]


@tf_export("image.encode_jpeg", "io.encode_jpeg")
def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None):
    return _ops.apply_op("EncodeJpeg", [_ops.convert_to_tensor(image, dtype=_dtypes.uint8)], {
        "format": format, "quality": quality, "progressive": progressive,
        "optimize_size": optimize_size, "chroma_downsampling": chroma_downsampling,
        "density_unit": density_unit, "x_density": x_density, "y_density": y_density,
        "xmp_metadata": xmp_metadata}, name=name or "EncodeJpeg").outputs[0]


@tf_export("image.encode_png", "io.encode_png")
def encode_png(image, compression=-1, name=None):
    return _ops.apply_op("EncodePng", [_ops.convert_to_tensor(image, dtype=_dtypes.uint8)], {
        "compression": compression}, name=name or "EncodePng").outputs[0]


def _flip(image, image_axis, name):
    image = _ops.convert_to_tensor(image, name="image")
    rank = image.shape.ndims
    if rank not in (3, 4):
        raise ValueError(f"'image' (shape {image.shape}) must have either 3 or 4 dimensions.")
    axis = image_axis + (1 if rank == 4 else 0)
    with _ops.name_scope(name):
        return _ops.apply_op("ReverseV2", [image, _ops.convert_to_tensor([axis])],
                             name="ReverseV2").outputs[0]


@tf_export("image.flip_left_right")
def flip_left_right(image):
    return _flip(image, 1, "flip_left_right")


@tf_export("image.flip_up_down")
def flip_up_down(image):
    return _flip(image, 0, "flip_up_down")


@tf_export("image.ResizeMethod")
class ResizeMethod:
    """The interpolations of tf.image.resize_images (TF1's numbering)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_RESIZE_OPS = {ResizeMethod.BILINEAR: "ResizeBilinear",
               ResizeMethod.NEAREST_NEIGHBOR: "ResizeNearestNeighbor",
               ResizeMethod.BICUBIC: "ResizeBicubic", ResizeMethod.AREA: "ResizeArea",
               "bilinear": "ResizeBilinear", "nearest": "ResizeNearestNeighbor",
               "bicubic": "ResizeBicubic", "area": "ResizeArea"}


def _resize(op_type, images, size, align_corners, half_pixel_centers, name):
    images = _ops.convert_to_tensor(images, name="images")
    size = _ops.convert_to_tensor(size, dtype=_dtypes.int32, name="size")
    attrs = {"align_corners": align_corners}
    if op_type != "ResizeArea":  # the one resize without half-pixel centers
        attrs["half_pixel_centers"] = half_pixel_centers
    return _ops.apply_op(op_type, [images, size], attrs, name=name or op_type).outputs[0]


@tf_export("image.resize_bilinear")
def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _resize("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


@tf_export("image.resize_nearest_neighbor")
def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    return _resize("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers,
                   name)


@tf_export("image.resize_bicubic")
def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _resize("ResizeBicubic", images, size, align_corners, half_pixel_centers, name)


@tf_export("image.resize_area")
def resize_area(images, size, align_corners=False, name=None):
    return _resize("ResizeArea", images, size, align_corners, False, name)


@tf_export("image.resize_images", "image.resize")
def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """TF1's resize_images: a [height, width, channels] image or a batch of them; bilinear
    results are float32, nearest-neighbour ones keep the dtype."""
    if preserve_aspect_ratio:
        raise NotImplementedError("resize_images(preserve_aspect_ratio=True) is not in "
                                  "Flowstone yet.")
    op_type = _RESIZE_OPS.get(method)
    if op_type is None:
        raise ValueError(f"Resize method {method!r} is not one of bilinear, nearest, bicubic "
                         "or area (tf.image.ResizeMethod).")
    images = _ops.convert_to_tensor(images, name="images")
    single = images.shape.ndims == 3
    with _ops.name_scope(name or "resize"):
        if single:
            images = _ops.apply_op("ExpandDims", [images, _ops.convert_to_tensor(0)],
                                   name="ExpandDims").outputs[0]
        resized = _resize(op_type, images, size, align_corners, False, None)
        if single:
            resized = _ops.apply_op("Squeeze", [resized], {"squeeze_dims": [0]},
                                    name="Squeeze").outputs[0]
        return resized
