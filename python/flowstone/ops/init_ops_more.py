"""The TF1 initializers beyond init_ops.py: orthogonal, uniform unit scaling and identity."""

import math

from flowstone import dtypes as _dtypes
from flowstone.ops import array_ops, linalg_ops, math_ops, random_ops
from flowstone.ops.init_ops import Initializer, _full_shape
from flowstone.util.tf_export import tf_export


@tf_export("initializers.orthogonal", "orthogonal_initializer")
class Orthogonal(Initializer):
    """A random orthogonal matrix (the Q of a Gaussian matrix's QR, signs fixed by R's
    diagonal) times `gain`, reshaped from [prod(shape[:-1]), shape[-1]]."""

    def __init__(self, gain=1.0, seed=None, dtype=None):
        from flowstone import dtypes as _dtypes
        super().__init__(dtype or _dtypes.float32)
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = _full_shape(shape)
        if len(dims) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional")
        dtype = self._dtype(dtype)
        rows = math.prod(dims[:-1])
        cols = dims[-1]
        gaussian = random_ops.random_normal([max(rows, cols), min(rows, cols)], dtype=dtype,
                                            seed=self.seed)
        q, r = linalg_ops.qr(gaussian, full_matrices=False)
        q = math_ops.multiply(q, math_ops.sign(linalg_ops.matrix_diag_part(r)))
        if rows < cols:
            q = array_ops.transpose(q)
        return math_ops.multiply(float(self.gain), array_ops.reshape(q, dims))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


@tf_export("initializers.uniform_unit_scaling", "uniform_unit_scaling_initializer")
class UniformUnitScaling(Initializer):
    """Uniform in [-m, m] with m = factor * sqrt(3 / input_size), input_size = prod(shape[:-1]),
    which keeps a linear layer's output scale (Sussillo & Abbott, 2014)."""

    def __init__(self, factor=1.0, seed=None, dtype=None):
        from flowstone import dtypes as _dtypes
        super().__init__(dtype or _dtypes.float32)
        self.factor, self.seed = factor, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = _full_shape(shape)
        input_size = max(float(math.prod(dims[:-1])), 1.0)
        limit = math.sqrt(3.0 / input_size) * self.factor
        return random_ops.random_uniform(dims, -limit, limit, self._dtype(dtype), seed=self.seed)

    def get_config(self):
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


@tf_export("initializers.identity")
class Identity(Initializer):
    """`gain` times the identity matrix (IRNN's recurrent kernel); 2-D shapes only."""

    def __init__(self, gain=1.0, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.gain = gain

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = list(shape) if shape is not None else []
        if len(dims) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices.")
        dtype = self._dtype(dtype)
        return linalg_ops.eye(int(dims[0]), int(dims[1]), dtype=dtype) * self.gain

    def get_config(self):
        return {"gain": self.gain, "dtype": self.dtype.name}
