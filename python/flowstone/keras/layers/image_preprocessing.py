"""Image preprocessing layers over channels-last images ([batch,] height, width, channels):
Resizing and CenterCrop, with tf-keras's (TF 2's `tf.image.resize`) half-pixel sampling."""

import flowstone as tf
from flowstone.keras.engine.base_layer import Layer
from flowstone.util.tf_export import tf_export

# TF 2's tf.image.resize without antialiasing: each method's kernel, and whether it samples at
# half-pixel centers (area resizing has no such attribute).
_RESIZES = {
    "bilinear": (tf.image.resize_bilinear, True),
    "nearest": (tf.image.resize_nearest_neighbor, True),
    "bicubic": (tf.image.resize_bicubic, True),
    "area": (tf.image.resize_area, False),
}


def _resize(images, size, interpolation):
    """TF 2's resize of a batch of images to `size`; float32 unless nearest."""
    resize, half_pixel = _RESIZES[interpolation]
    if interpolation != "nearest":
        images = tf.cast(images, tf.float32)
    if half_pixel:
        return resize(images, size, half_pixel_centers=True)
    return resize(images, size)


def _smart_resize(images, size, interpolation):
    """The largest centred crop with the target's aspect ratio, resized to `size`
    (keras.preprocessing.image.smart_resize)."""
    shape = tf.shape(images)
    height, width = tf.cast(shape[1], tf.float32), tf.cast(shape[2], tf.float32)
    target_height, target_width = size
    crop_height = tf.minimum(shape[1], tf.cast(width * target_height / target_width, tf.int32))
    crop_width = tf.minimum(shape[2], tf.cast(height * target_width / target_height, tf.int32))
    top = tf.cast((height - tf.cast(crop_height, tf.float32)) / 2, tf.int32)
    left = tf.cast((width - tf.cast(crop_width, tf.float32)) / 2, tf.int32)
    cropped = tf.slice(images, tf.stack([0, top, left, 0]),
                       tf.stack([-1, crop_height, crop_width, -1]))
    return _resize(cropped, size, interpolation)


def _batched(images, transform):
    """Applies `transform` (of a 4-D batch) to a batch or to one 3-D image."""
    if images.shape.ndims == 3:
        return tf.squeeze(transform(tf.expand_dims(images, 0)), [0])
    if images.shape.ndims != 4:
        raise ValueError(f"Expected images of rank 3 (height, width, channels) or 4 (with a "
                         f"batch), got shape {images.shape}.")
    return transform(images)


def _output_shape(input_shape, height, width):
    dims = tf.TensorShape(input_shape).as_list()
    dims[-3], dims[-2] = height, width
    return tf.TensorShape(dims)


@tf_export("keras.layers.Resizing", "keras.layers.experimental.preprocessing.Resizing")
class Resizing(Layer):
    """Resizes images to height x width by `interpolation` (bilinear, nearest, bicubic, area);
    with `crop_to_aspect_ratio`, first crops the centre to the target's aspect ratio."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 **kwargs):
        if interpolation not in _RESIZES:
            raise NotImplementedError(
                f"Resizing(interpolation={interpolation!r}) is not supported: Flowstone "
                f"has {sorted(_RESIZES)} (tf-keras also has the antialiasing kernels).")
        super().__init__(**kwargs)
        self.height, self.width = height, width
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = crop_to_aspect_ratio

    def call(self, inputs):
        size = [self.height, self.width]
        resize = _smart_resize if self.crop_to_aspect_ratio else _resize
        outputs = _batched(inputs, lambda images: resize(images, size, self.interpolation))
        return tf.cast(outputs, self._dtype)

    def compute_output_shape(self, input_shape):
        return _output_shape(input_shape, self.height, self.width)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio}


@tf_export("keras.layers.CenterCrop", "keras.layers.experimental.preprocessing.CenterCrop")
class CenterCrop(Layer):
    """The central height x width window; an image smaller than that on either side is
    instead centre-cropped to the target's aspect ratio and resized up (bilinear)."""

    def __init__(self, height, width, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = height, width

    def _crop(self, images):
        shape = tf.shape(images)
        height_extra, width_extra = shape[1] - self.height, shape[2] - self.width

        def crop():
            top = tf.cast(height_extra / 2, tf.int32)
            left = tf.cast(width_extra / 2, tf.int32)
            return tf.slice(images, tf.stack([0, top, left, 0]),
                            tf.stack([-1, self.height, self.width, -1]))

        def upsize():
            return tf.cast(_smart_resize(images, [self.height, self.width], "bilinear"),
                           images.dtype)

        dims = images.shape.as_list()
        if dims[1] is not None and dims[2] is not None:
            return crop() if dims[1] >= self.height and dims[2] >= self.width else upsize()
        # Sizes known only when it runs (graph mode): the branches' shapes differ statically.
        fits = tf.logical_and(height_extra >= 0, width_extra >= 0)
        outputs = tf.cond(fits, crop, upsize)
        outputs.set_shape(_output_shape(images.shape, self.height, self.width))
        return outputs

    def call(self, inputs):
        return _batched(tf.cast(inputs, self._dtype), self._crop)

    def compute_output_shape(self, input_shape):
        return _output_shape(input_shape, self.height, self.width)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}
