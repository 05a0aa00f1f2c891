"""tf.image functions that TensorFlow composes in Python from other ops: the YIQ/YUV colour
spaces, grayscale_to_rgb, transpose, adjust_gamma, total_variation, image_gradients,
sobel_edges, psnr, ssim, ssim_multiscale, resize_image_with_pad, JPEG-quality round trips, and
and the codec helpers is_jpeg, decode_bmp, extract_jpeg_shape and decode_and_crop_jpeg over
their C++ ops. Each builds the graph TensorFlow builds, so gradients flow where
TensorFlow's do.

Filter sizes and the power factors of the SSIMs are taken as Python values (numbers), as
TensorFlow programs pass them.
"""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import (array_ops, conv_ops, image_adjust_ops, image_ops, math_ops,
                           matmul_ops, random_ops, reduction_ops, string_ops)
from flowstone.util.tf_export import tf_export

# --- colour spaces ------------------------------------------------------------------------------

# Columns: the output channels as sums of the input channels (TensorFlow's matrices).
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _mix_channels(images, kernel, name):
    with _ops.name_scope(name):
        images = _ops.convert_to_tensor(images, name="images")
        if not images.dtype.is_floating:
            raise TypeError(f"{name} takes float images, got {images.dtype.name}")
        matrix = _ops.constant(kernel, dtype=images.dtype, name="kernel")
        flat = matmul_ops.matmul(array_ops.reshape(images, [-1, 3]), matrix)
        result = array_ops.reshape(flat, array_ops.shape(images))
        result.set_shape(images.shape)
        return result


@tf_export("image.rgb_to_yiq")
def rgb_to_yiq(images):
    return _mix_channels(images, _RGB_TO_YIQ, "rgb_to_yiq")


@tf_export("image.yiq_to_rgb")
def yiq_to_rgb(images):
    return _mix_channels(images, _YIQ_TO_RGB, "yiq_to_rgb")


@tf_export("image.rgb_to_yuv")
def rgb_to_yuv(images):
    return _mix_channels(images, _RGB_TO_YUV, "rgb_to_yuv")


@tf_export("image.yuv_to_rgb")
def yuv_to_rgb(images):
    return _mix_channels(images, _YUV_TO_RGB, "yuv_to_rgb")


@tf_export("image.grayscale_to_rgb")
def grayscale_to_rgb(images, name=None):
    """A [..., 1] grey image as [..., 3] RGB, the grey value in each channel."""
    with _ops.name_scope(name, "grayscale_to_rgb"):
        images = _ops.convert_to_tensor(images, name="images")
        if images.shape.ndims is not None and images.shape.as_list()[-1] not in (None, 1):
            raise ValueError(f"Last dimension of a grayscale image should be size 1, got shape "
                             f"{images.shape}")
        rank = images.shape.ndims
        if rank is None:
            raise ValueError("grayscale_to_rgb needs the rank of images known")
        return array_ops.tile(images, [1] * (rank - 1) + [3])


@tf_export("image.transpose", "image.transpose_image")
def transpose(image, name=None):
    """Height and width swapped ([h, w, c] -> [w, h, c], batches too)."""
    with _ops.name_scope(name, "transpose"):
        image = image_adjust_ops._image(image)
        perm = [0, 2, 1, 3] if image.shape.ndims == 4 else [1, 0, 2]
        return array_ops.transpose(image, perm)


@tf_export("image.adjust_gamma")
def adjust_gamma(image, gamma=1, gain=1):
    """gain * image ** gamma on the image as floats in [0, 1], converted back to its dtype."""
    with _ops.name_scope(None, "adjust_gamma"):
        image = _ops.convert_to_tensor(image, name="image")
        if isinstance(gamma, (int, float)) and gamma < 0:
            raise ValueError(f"Gamma should be a non-negative real number, got {gamma}")
        original = image.dtype
        floats = image if original in (_dtypes.float16, _dtypes.float32) else \
            image_adjust_ops.convert_image_dtype(image, _dtypes.float32)
        adjusted = math_ops.multiply(
            math_ops.cast(gain, floats.dtype),
            math_ops.pow(floats, math_ops.cast(gamma, floats.dtype)))
        return image_adjust_ops.convert_image_dtype(adjusted, original, saturate=True)


# --- differences and edges ----------------------------------------------------------------------


@tf_export("image.total_variation")
def total_variation(images, name=None):
    """The sum of absolute differences between neighbouring pixels, per image of a batch."""
    with _ops.name_scope(name, "total_variation"):
        images = _ops.convert_to_tensor(images, name="images")
        if images.shape.ndims == 3:
            down = images[1:, :, :] - images[:-1, :, :]
            across = images[:, 1:, :] - images[:, :-1, :]
            axis = None
        elif images.shape.ndims == 4:
            down = images[:, 1:, :, :] - images[:, :-1, :, :]
            across = images[:, :, 1:, :] - images[:, :, :-1, :]
            axis = [1, 2, 3]
        else:
            raise ValueError(f"'images' must be either 3 or 4-dimensional, got shape "
                             f"{images.shape}")
        return (reduction_ops.reduce_sum(math_ops.abs(down), axis=axis) +
                reduction_ops.reduce_sum(math_ops.abs(across), axis=axis))


@tf_export("image.image_gradients")
def image_gradients(image):
    """(dy, dx): each pixel's difference to the pixel below and to the right, 0 on the last row
    and column; [batch, height, width, depth] images."""
    image = _ops.convert_to_tensor(image, name="image")
    if image.shape.ndims != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not "
                         f"{image.shape}")
    with _ops.name_scope(None, "image_gradients"):
        dy = image[:, 1:, :, :] - image[:, :-1, :, :]
        dx = image[:, :, 1:, :] - image[:, :, :-1, :]
        dy = array_ops.pad(dy, [[0, 0], [0, 1], [0, 0], [0, 0]])
        dx = array_ops.pad(dx, [[0, 0], [0, 0], [0, 1], [0, 0]])
        dy.set_shape(image.shape)
        dx.set_shape(image.shape)
        return dy, dx


@tf_export("image.sobel_edges")
def sobel_edges(image):
    """Sobel responses [batch, h, w, d, 2] (vertical then horizontal) of each channel of
    [batch, h, w, d] float images, the borders reflected."""
    with _ops.name_scope(None, "sobel_edges"):
        image = _ops.convert_to_tensor(image, name="image")
        depth = image.shape.as_list()[-1] if image.shape.ndims == 4 else None
        if depth is None:
            raise ValueError(f"sobel_edges needs [batch, h, w, d] images with d known, got "
                             f"{image.shape}")
        kernels = np.array([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]],
                            [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]]).transpose(1, 2, 0)
        filters = np.tile(kernels[:, :, None, :], [1, 1, depth, 1])
        padded = array_ops.pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
        edges = conv_ops.depthwise_conv2d(
            padded, _ops.constant(filters, dtype=image.dtype, name="sobel_filters"),
            [1, 1, 1, 1], "VALID")
        shape = array_ops.concat([array_ops.shape(image), [2]], 0)
        result = array_ops.reshape(edges, shape)
        result.set_shape(image.shape.as_list() + [2])
        return result


# --- quality metrics ----------------------------------------------------------------------------


def _as_float_images(a, b, max_val):
    a = _ops.convert_to_tensor(a, name="a")
    b = _ops.convert_to_tensor(b, name="b")
    if a.dtype != b.dtype:
        raise TypeError(f"The two images must have one dtype, got {a.dtype.name} and "
                        f"{b.dtype.name}")
    if a.shape.ndims is not None and a.shape.ndims < 3:
        raise ValueError(f"Images must have at least 3 dimensions, got shape {a.shape}")
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"The two images must have compatible shapes, got {a.shape} and "
                         f"{b.shape}")
    max_val = image_adjust_ops.convert_image_dtype(math_ops.cast(max_val, a.dtype),
                                                   _dtypes.float32)
    return (image_adjust_ops.convert_image_dtype(a, _dtypes.float32),
            image_adjust_ops.convert_image_dtype(b, _dtypes.float32), max_val)


@tf_export("image.psnr")
def psnr(a, b, max_val, name=None):
    """Peak signal-to-noise ratio in dB between images of [..., h, w, c], per image."""
    with _ops.name_scope(name, "PSNR"):
        a, b, max_val = _as_float_images(a, b, max_val)
        mse = reduction_ops.reduce_mean(math_ops.squared_difference(a, b), [-3, -2, -1])
        return math_ops.subtract(
            20 * math_ops.log(max_val) / np.float32(np.log(10.0)),
            np.float32(10 / np.log(10)) * math_ops.log(mse), name="psnr")


def _gaussian_filter(size, sigma, depth):
    coords = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    g = np.exp(-0.5 * (coords[:, None] ** 2 + coords[None, :] ** 2) / sigma ** 2)
    g /= g.sum()
    return np.tile(g[:, :, None, None], [1, 1, depth, 1]).astype(np.float32)


def _ssim_per_channel(x, y, max_val, filter_size, filter_sigma, k1, k2, return_index_map):
    """(ssim, cs) per channel of float32 images [..., h, w, c] with h, w and c known."""
    height, width, depth = x.shape.as_list()[-3:]
    if None in (height, width, depth):
        raise ValueError(f"ssim needs the images' height, width and channels known, got "
                         f"{x.shape}")
    if height < filter_size or width < filter_size:
        raise ValueError(f"The images ({height} x {width}) must be at least filter_size = "
                         f"{filter_size} in height and width")
    kernel = _ops.constant(_gaussian_filter(filter_size, filter_sigma, depth), name="kernel")

    def blur(t):
        shape = array_ops.shape(t)
        flat = array_ops.reshape(t, [-1, height, width, depth])
        blurred = conv_ops.depthwise_conv2d(flat, kernel, [1, 1, 1, 1], "VALID")
        return array_ops.reshape(blurred, array_ops.concat(
            [shape[:-3], array_ops.shape(blurred)[1:]], 0))

    c1 = (k1 * max_val) ** 2
    c2 = (k2 * max_val) ** 2
    mean_x, mean_y = blur(x), blur(y)
    # Luminance (2 mu_x mu_y + c1) / (mu_x^2 + mu_y^2 + c1); contrast-structure
    # (2 cov_xy + c2) / (var_x + var_y + c2), with MATLAB's MS-SSIM compensation of 1.
    means = mean_x * mean_y * 2.0
    luminance = (means + c1) / (math_ops.square(mean_x) + math_ops.square(mean_y) + c1)
    cross = blur(x * y) * 2.0
    squares = blur(math_ops.square(x) + math_ops.square(y))
    cs = (cross - means + c2) / (squares - (math_ops.square(mean_x) + math_ops.square(mean_y)) +
                                 c2)
    if return_index_map:
        return luminance * cs, cs
    return (reduction_ops.reduce_mean(luminance * cs, [-3, -2]),
            reduction_ops.reduce_mean(cs, [-3, -2]))


@tf_export("image.ssim")
def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03,
         return_index_map=False):
    """Structural similarity of images [..., h, w, c] (Wang et al. 2004, an 11 x 11 Gaussian
    window of sigma 1.5), averaged over the channels (and the pixels unless return_index_map)."""
    with _ops.name_scope(None, "SSIM"):
        x, y, max_val = _as_float_images(img1, img2, max_val)
        value, _ = _ssim_per_channel(x, y, max_val, filter_size, filter_sigma, k1, k2,
                                     return_index_map)
        return reduction_ops.reduce_mean(value, [-1])


_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


@tf_export("image.ssim_multiscale")
def ssim_multiscale(img1, img2, max_val, power_factors=_MSSSIM_WEIGHTS, filter_size=11,
                    filter_sigma=1.5, k1=0.01, k2=0.03):
    """Multi-scale SSIM (Wang, Simoncelli and Bovik 2003): contrast-structure at each scale
    (halved by 2 x 2 average pooling, odd sizes padded symmetrically first) and SSIM at the
    last, raised to power_factors and multiplied, averaged over the channels."""
    with _ops.name_scope(None, "MS-SSIM"):
        x, y, max_val = _as_float_images(img1, img2, max_val)
        images = [x, y]
        factors = []
        for k in range(len(power_factors)):
            with _ops.name_scope(None, f"Scale{k}"):
                if k > 0:
                    images = [_halve(t) for t in images]
                value, cs = _ssim_per_channel(*images, max_val, filter_size, filter_sigma, k1,
                                              k2, False)
                factors.append(math_ops.relu(cs))
        factors[-1] = math_ops.relu(value)  # the last scale counts its full SSIM
        stacked = array_ops.stack(factors, axis=-1)
        weighted = math_ops.pow(stacked, _ops.constant(power_factors, dtype=stacked.dtype))
        return reduction_ops.reduce_mean(reduction_ops.reduce_prod(weighted, [-1]), [-1])


def _halve(images):
    """2 x 2 average pooling of [..., h, w, c], an odd height or width padded symmetrically."""
    shape = images.shape.as_list()
    height, width, depth = shape[-3:]
    head = array_ops.shape(images)[:-3]
    flat = array_ops.reshape(images, [-1, height, width, depth])
    if height % 2 or width % 2:
        flat = array_ops.pad(flat, [[0, 0], [0, height % 2], [0, width % 2], [0, 0]],
                             mode="SYMMETRIC")
    pooled = conv_ops.avg_pool(flat, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    small = [(height + height % 2) // 2, (width + width % 2) // 2, depth]
    result = array_ops.reshape(pooled, array_ops.concat([head, small], 0))
    result.set_shape(shape[:-3] + small)
    return result


# --- resizing with padding ----------------------------------------------------------------------


@tf_export("image.resize_image_with_pad")
def resize_image_with_pad(image, target_height, target_width,
                          method=image_ops.ResizeMethod.BILINEAR, align_corners=False):
    """`image` resized to fit [target_height, target_width] keeping its aspect ratio, then
    centred on a zero background of that size."""
    image = image_adjust_ops._image(image)
    dims = image.shape.as_list()[-3:-1]
    if None in dims:
        raise ValueError(f"resize_image_with_pad needs the image's height and width known, got "
                         f"{image.shape}")
    if target_height <= 0 or target_width <= 0:
        raise ValueError(f"target_height and target_width must be > 0, got {target_height} and "
                         f"{target_width}")
    f32 = np.float32
    height, width = f32(dims[0]), f32(dims[1])
    ratio = max(width / f32(target_width), height / f32(target_height))
    resized_height, resized_width = height / ratio, width / ratio
    pad_height = max(0, int(np.floor((f32(target_height) - resized_height) / f32(2))))
    pad_width = max(0, int(np.floor((f32(target_width) - resized_width) / f32(2))))
    with _ops.name_scope(None, "resize_image_with_pad"):
        resized = image_ops.resize_images(
            image, [int(np.floor(resized_height)), int(np.floor(resized_width))], method,
            align_corners=align_corners)
        return image_adjust_ops.pad_to_bounding_box(resized, pad_height, pad_width,
                                                    target_height, target_width)


# --- JPEG helpers ---------------------------------------------------------------------------------


@tf_export("image.is_jpeg", "io.is_jpeg")
def is_jpeg(contents, name=None):
    """Whether `contents` start with JPEG's signature (FF D8 FF)."""
    with _ops.name_scope(name, "is_jpeg"):
        head = string_ops.substr(contents, 0, 3)
        return math_ops.equal(head, _ops.constant(b"\xff\xd8\xff"), name=name)


@tf_export("image.extract_jpeg_shape", "io.extract_jpeg_shape")
def extract_jpeg_shape(contents, output_type=_dtypes.int32, name=None):
    """A JPEG's [height, width, channels], read from its header."""
    return _ops.apply_op("ExtractJpegShape", [image_ops._contents(contents)], {
        "output_type": _dtypes.as_dtype(output_type)},
        name=name or "ExtractJpegShape").outputs[0]


@tf_export("image.decode_and_crop_jpeg", "io.decode_and_crop_jpeg")
def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                         name=None):
    """The [y, x, height, width] crop_window of a JPEG's pixels."""
    window = _ops.convert_to_tensor(crop_window, dtype=_dtypes.int32, name="crop_window")
    return _ops.apply_op("DecodeAndCropJpeg", [image_ops._contents(contents), window], {
        "channels": channels, "ratio": ratio, "fancy_upscaling": fancy_upscaling,
        "try_recover_truncated": try_recover_truncated,
        "acceptable_fraction": float(acceptable_fraction), "dct_method": dct_method,
    }, name=name or "DecodeAndCropJpeg").outputs[0]


@tf_export("image.decode_bmp", "io.decode_bmp")
def decode_bmp(contents, channels=0, name=None):
    """An uncompressed BMP's pixels, [height, width, channels] uint8."""
    return _ops.apply_op("DecodeBmp", [image_ops._contents(contents)], {"channels": channels},
                         name=name or "DecodeBmp").outputs[0]


@tf_export("image.adjust_jpeg_quality")
def adjust_jpeg_quality(image, jpeg_quality, name=None):
    """`image` after a JPEG round trip at `jpeg_quality` (0 to 100, a number or a tensor), in
    its own dtype."""
    with _ops.name_scope(name, "adjust_jpeg_quality"):
        image = _ops.convert_to_tensor(image, name="image")
        channels = image.shape.as_list()[-1] if image.shape.ndims else None
        original = image.dtype
        pixels = image_adjust_ops.convert_image_dtype(image, _dtypes.uint8, saturate=True)
        quality = _ops.convert_to_tensor(jpeg_quality, dtype=_dtypes.int32, name="jpeg_quality")
        encoded = _ops.apply_op("EncodeJpegVariableQuality", [pixels, quality]).outputs[0]
        decoded = image_ops.decode_jpeg(encoded, channels=channels or 0)
        return image_adjust_ops.convert_image_dtype(decoded, original, saturate=True)


@tf_export("image.random_jpeg_quality")
def random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed=None):
    """adjust_jpeg_quality at a quality drawn uniformly from [min, max)."""
    if not (0 <= min_jpeg_quality <= 100 and 0 <= max_jpeg_quality <= 100):
        raise ValueError("jpeg encoding range must be between 0 and 100.")
    if min_jpeg_quality >= max_jpeg_quality:
        raise ValueError("`min_jpeg_quality` must be less than `max_jpeg_quality`.")
    quality = random_ops.random_uniform([], min_jpeg_quality, max_jpeg_quality, seed=seed,
                                        dtype=_dtypes.int32)
    return adjust_jpeg_quality(image, quality)
