"""tf.image's codecs (over the C++ ops of src/ops/image: libjpeg-turbo and libpng) and flips."""

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
        "channels": channels, "dtype": _dtypes.as_dtype(dtype)}, name=name or "DecodePng").outputs[0]


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
