"""InputSpec, the description of a layer's inputs that tf.layers and tf.keras.layers share."""

from flowstone.util.tf_export import tf_export


@tf_export("layers.InputSpec")
class InputSpec:
    """What a layer accepts (dtype, rank bounds, known axes); Keras layers check it before
    building (keras/engine/input_spec.py)."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None, allow_last_axis_squeeze=False, name=None):
        self.dtype = dtype
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        self.name = name

    def __repr__(self):
        return (f"InputSpec(dtype={self.dtype}, shape={self.shape}, ndim={self.ndim}, "
                f"max_ndim={self.max_ndim}, min_ndim={self.min_ndim}, axes={self.axes})")
