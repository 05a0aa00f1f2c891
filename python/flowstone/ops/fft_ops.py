"""tf.signal's Fourier transforms (and TF1's tf.spectral and top-level names for them): fft, ifft,
fft2d, ifft2d, fft3d, ifft3d over complex tensors; rfft, irfft, rfft2d, irfft2d, rfft3d, irfft3d
between real signals and their non-negative frequencies; fftshift and ifftshift. The FFT/RFFT op
family (src/ops/signal/fft_ops.cc) computes; this module picks dtypes and fft_length as
TensorFlow does.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array
from flowstone.ops import manip_ops as _manip
from flowstone.ops import math_ops as _math
from flowstone.util.tf_export import tf_export

_COMPLEX_OF = {_dtypes.float32: _dtypes.complex64, _dtypes.float64: _dtypes.complex128}


def _complex_fft(op_type, input, name):  # noqa: A002 - TensorFlow's name
    with _ops.name_scope(name, op_type, [input]) as scope:
        x = _ops.convert_to_tensor(input, name="input")
        return _ops.apply_op(op_type, [x], {}, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


def _make_complex_fft(op_type, rank, names):
    def transform(input, name=None):  # noqa: A002
        return _complex_fft(op_type, input, name)

    inverse = "inverse " if op_type.startswith("I") else ""
    transform.__name__ = names[0].rsplit(".", 1)[-1]
    transform.__doc__ = (f"The {inverse}discrete Fourier transform over the innermost {rank} "
                         f"dimension(s) of a complex tensor ({op_type}).")
    return tf_export(*names)(transform)


fft = _make_complex_fft("FFT", 1, ("signal.fft", "spectral.fft", "fft"))
ifft = _make_complex_fft("IFFT", 1, ("signal.ifft", "spectral.ifft", "ifft"))
fft2d = _make_complex_fft("FFT2D", 2, ("signal.fft2d", "spectral.fft2d", "fft2d"))
ifft2d = _make_complex_fft("IFFT2D", 2, ("signal.ifft2d", "spectral.ifft2d", "ifft2d"))
fft3d = _make_complex_fft("FFT3D", 3, ("signal.fft3d", "spectral.fft3d", "fft3d"))
ifft3d = _make_complex_fft("IFFT3D", 3, ("signal.ifft3d", "spectral.ifft3d", "ifft3d"))


def _inner_dims(x, rank):
    """The innermost `rank` dimensions of x: a list of ints when known, else an int32 Tensor."""
    dims = x.shape.as_list()[-rank:] if x.shape.rank is not None else None
    if dims is not None and all(d is not None for d in dims):
        return dims
    return _array.shape(x)[-rank:]


def _fft_length_for(x, rank, inverse):
    """TensorFlow's default fft_length: the input's innermost dimensions, with the last one
    2 * (n - 1) for an inverse transform (the even signal whose half spectrum has n entries)."""
    dims = _inner_dims(x, rank)
    if not inverse:
        return dims
    if isinstance(dims, list):
        return dims[:-1] + [2 * (dims[-1] - 1)]
    return _array.concat([dims[:-1], 2 * (dims[-1:] - 1)], axis=0)


def _pad_to(x, rank, lengths):
    """Zero-pads x's innermost dimensions up to `lengths` (known ones only), as TensorFlow's
    Python does before the op, so that a gradient comes back in x's own shape. The op crops
    dimensions that are longer."""
    if not isinstance(lengths, list) or x.shape.rank is None:
        return x
    dims = x.shape.as_list()
    pads = [[0, 0] for _ in dims]
    for i, length in enumerate(lengths):
        d = dims[len(dims) - rank + i]
        if d is not None and d < length:
            pads[len(dims) - rank + i][1] = length - d
    if all(after == 0 for _, after in pads):
        return x
    return _array.pad(x, pads)


def _real_fft(op_type, rank, inverse, input, fft_length, name):  # noqa: A002
    with _ops.name_scope(name, op_type.lower(), [input, fft_length]) as scope:
        if inverse:
            x = _ops.convert_to_tensor(input, name="input", preferred_dtype=_dtypes.complex64)
            if not x.dtype.is_complex:
                raise ValueError(f"{op_type} requires tf.complex64 or tf.complex128 inputs, "
                                 f"got: {x}")
            real_dtype, complex_dtype = x.dtype.real_dtype, x.dtype
        else:
            x = _ops.convert_to_tensor(input, name="input", preferred_dtype=_dtypes.float32)
            if x.dtype not in _COMPLEX_OF:
                raise ValueError(f"{op_type} requires tf.float32 or tf.float64 inputs, got: {x}")
            real_dtype, complex_dtype = x.dtype, _COMPLEX_OF[x.dtype]
        if x.shape.rank is not None and x.shape.rank < rank:
            raise ValueError(f"Shape {x.shape} must have rank at least {rank}")
        if fft_length is None:
            fft_length = _fft_length_for(x, rank, inverse)
        if not isinstance(fft_length, _ops.Tensor):
            fft_length = [int(v) for v in fft_length]
            # The op reads the first fft_length[-1] // 2 + 1 frequencies of an inverse's input.
            padded = fft_length[:-1] + [fft_length[-1] // 2 + 1] if inverse else fft_length
            x = _pad_to(x, rank, padded)
        lengths = _ops.convert_to_tensor(fft_length, dtype=_dtypes.int32, name="fft_length")
        attrs = {"Treal": real_dtype, "Tcomplex": complex_dtype}
        return _ops.apply_op(op_type, [x, lengths], attrs, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


def _make_real_fft(op_type, rank, inverse):
    def transform(input_tensor, fft_length=None, name=None):
        return _real_fft(op_type, rank, inverse, input_tensor, fft_length, name)

    lower = op_type.lower()
    transform.__name__ = lower
    if inverse:
        transform.__doc__ = (f"The real signal (fft_length points over the innermost {rank} "
                             f"dimension(s)) whose {op_type[1:]} is the input ({op_type}).")
    else:
        transform.__doc__ = (f"The Fourier transform of a real signal over the innermost {rank} "
                             f"dimension(s), cropped or zero-padded to fft_length: the "
                             f"fft_length[-1] // 2 + 1 non-negative frequencies ({op_type}).")
    return tf_export(f"signal.{lower}", f"spectral.{lower}")(transform)


rfft = _make_real_fft("RFFT", 1, False)
irfft = _make_real_fft("IRFFT", 1, True)
rfft2d = _make_real_fft("RFFT2D", 2, False)
irfft2d = _make_real_fft("IRFFT2D", 2, True)
rfft3d = _make_real_fft("RFFT3D", 3, False)
irfft3d = _make_real_fft("IRFFT3D", 3, True)


def _shift(x, axes, name, default_name, sign):
    """Rolls x by half of each dimension in `axes` (all of them by default): sign 1 moves the zero
    frequency to the centre, -1 back."""
    with _ops.name_scope(name, default_name, [x]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        if axes is None:
            if x.shape.rank is None:
                raise ValueError(f"{default_name} needs the rank of x known, or axes given")
            axes = list(range(x.shape.rank))
        axes = [axes] if isinstance(axes, int) else [int(a) for a in axes]
        dims = x.shape.as_list() if x.shape.rank is not None else None
        if dims is not None and all(dims[a] is not None for a in axes):
            shift = [sign * (dims[a] // 2) for a in axes]
        else:
            positive = _math.floormod(_ops.convert_to_tensor(axes, dtype=_dtypes.int32),
                                      _array.rank(x))
            shift = sign * (_array.gather(_array.shape(x), positive) // 2)
        return _manip.roll(x, shift, axes, name=scope.rstrip("/"))


@tf_export("signal.fftshift")
def fftshift(x, axes=None, name=None):
    """Moves the zero-frequency component to the centre of `axes` (numpy's fftshift)."""
    return _shift(x, axes, name, "fftshift", 1)


@tf_export("signal.ifftshift")
def ifftshift(x, axes=None, name=None):
    """The inverse of fftshift (numpy's ifftshift)."""
    return _shift(x, axes, name, "ifftshift", -1)
