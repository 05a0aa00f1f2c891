"""Conformance cases for complex numbers (see op_cases.py): the complex-number ops (Complex, Real,
Imag, Conj, Angle, ComplexAbs), the Fourier transforms against numpy.fft, and complex128 cases
of the math ops that take complex numbers. Gradients of complex inputs are checked against
finite differences of the real and imaginary parts (TensorFlow's convention: dL/dRe + i dL/dIm;
see test_op_conformance.py)."""

import numpy as np

from flowstone import dtypes
from op_cases import Case, rand


def crand(*shape, low=-1.0, high=1.0):
    """complex128 values with real and imaginary parts uniform in [low, high)."""
    return rand(*shape, low=low, high=high) + 1j * rand(*shape, low=low, high=high)


def _away_from_zero(*shape):
    z = crand(*shape)
    return np.where(np.abs(z) < 0.3, 0.5 + 0.5j, z)


def _lengths(*values):
    return np.array(values, np.int32)


def _inner(rank):
    return tuple(range(-rank, 0))


CASES = [
    # The complex-number ops.
    Case("Complex", [rand(2, 3), rand(3)], lambda re, im: re + 1j * im,
         attrs={"Tout": dtypes.complex128}, grad=[0, 1]),
    Case("Complex", [rand(2, 3).astype(np.float32), rand(2, 3).astype(np.float32)],
         lambda re, im: (re + 1j * im).astype(np.complex64), attrs={"Tout": dtypes.complex64}),
    Case("Real", [crand(2, 3)], np.real, attrs={"Tout": dtypes.float64}, grad=[0]),
    Case("Imag", [crand(2, 3)], np.imag, attrs={"Tout": dtypes.float64}, grad=[0]),
    Case("Conj", [crand(2, 3)], np.conj, grad=[0]),
    Case("Angle", [_away_from_zero(2, 3)], np.angle, attrs={"Tout": dtypes.float64}, grad=[0]),
    Case("ComplexAbs", [_away_from_zero(2, 3)], np.abs, attrs={"Tout": dtypes.float64},
         grad=[0]),
    Case("ComplexAbs", [crand(4).astype(np.complex64)], lambda z: np.abs(z).astype(np.float32),
         attrs={"Tout": dtypes.float32}),
    # Fourier transforms (odd, even and prime lengths; batches in front).
    Case("FFT", [crand(2, 8)], lambda z: np.fft.fft(z), grad=[0], rtol=1e-10, atol=1e-10),
    Case("FFT", [crand(7)], lambda z: np.fft.fft(z), grad=[0], rtol=1e-10, atol=1e-10),
    Case("IFFT", [crand(2, 6)], lambda z: np.fft.ifft(z), grad=[0], rtol=1e-10, atol=1e-10),
    Case("FFT", [crand(3, 5).astype(np.complex64)], lambda z: np.fft.fft(z).astype(np.complex64),
         rtol=1e-5, atol=1e-5),
    Case("FFT2D", [crand(2, 4, 3)], lambda z: np.fft.fft2(z), grad=[0], rtol=1e-10, atol=1e-10),
    Case("IFFT2D", [crand(3, 5)], lambda z: np.fft.ifft2(z), grad=[0], rtol=1e-10, atol=1e-10),
    Case("FFT3D", [crand(2, 2, 3, 4)], lambda z: np.fft.fftn(z, axes=_inner(3)), grad=[0],
         rtol=1e-10, atol=1e-10),
    Case("IFFT3D", [crand(2, 3, 2)], lambda z: np.fft.ifftn(z, axes=_inner(3)), grad=[0],
         rtol=1e-10, atol=1e-10),
    Case("RFFT", [rand(2, 8), _lengths(8)], lambda x, n: np.fft.rfft(x, n=8),
         attrs={"Treal": dtypes.float64, "Tcomplex": dtypes.complex128}, grad=[0],
         rtol=1e-10, atol=1e-10),
    Case("RFFT", [rand(3, 7), _lengths(7)], lambda x, n: np.fft.rfft(x, n=7),
         attrs={"Treal": dtypes.float64, "Tcomplex": dtypes.complex128}, grad=[0],
         rtol=1e-10, atol=1e-10),
    # fft_length crops (5 of 6 points) and pads (8 points from 6).
    Case("RFFT", [rand(6), _lengths(5)], lambda x, n: np.fft.rfft(x, n=5),
         attrs={"Treal": dtypes.float64, "Tcomplex": dtypes.complex128}, rtol=1e-10, atol=1e-10),
    Case("RFFT", [rand(6).astype(np.float32), _lengths(8)],
         lambda x, n: np.fft.rfft(x, n=8).astype(np.complex64), rtol=1e-5, atol=1e-5),
    Case("IRFFT", [crand(2, 5), _lengths(8)], lambda z, n: np.fft.irfft(z, n=8),
         attrs={"Treal": dtypes.float64, "Tcomplex": dtypes.complex128}, grad=[0],
         rtol=1e-10, atol=1e-10),
    Case("IRFFT", [crand(4), _lengths(7)], lambda z, n: np.fft.irfft(z, n=7),
         attrs={"Treal": dtypes.float64, "Tcomplex": dtypes.complex128}, grad=[0],
         rtol=1e-10, atol=1e-10),
    Case("RFFT2D", [rand(2, 4, 6), _lengths(4, 6)], lambda x, n: np.fft.rfft2(x, s=(4, 6)),
         attrs={"Treal": dtypes.float64, "Tcomplex": dtypes.complex128}, grad=[0],
         rtol=1e-10, atol=1e-10),
    Case("IRFFT2D", [crand(3, 4), _lengths(3, 6)], lambda z, n: np.fft.irfft2(z, s=(3, 6)),
         attrs={"Treal": dtypes.float64, "Tcomplex": dtypes.complex128}, grad=[0],
         rtol=1e-10, atol=1e-10),
    Case("RFFT3D", [rand(2, 3, 4), _lengths(2, 3, 4)],
         lambda x, n: np.fft.rfftn(x, s=(2, 3, 4), axes=_inner(3)),
         attrs={"Treal": dtypes.float64, "Tcomplex": dtypes.complex128}, grad=[0],
         rtol=1e-10, atol=1e-10),
    Case("IRFFT3D", [crand(2, 2, 3), _lengths(2, 2, 5)],
         lambda z, n: np.fft.irfftn(z, s=(2, 2, 5), axes=_inner(3)),
         attrs={"Treal": dtypes.float64, "Tcomplex": dtypes.complex128}, grad=[0],
         rtol=1e-10, atol=1e-10),
    # Math ops on complex128 (their gradients carry the conjugates).
    Case("AddV2", [crand(2, 3), crand(3)], np.add, grad=[0, 1]),
    Case("Sub", [crand(2, 1), crand(1, 3)], np.subtract, grad=[0, 1]),
    Case("Mul", [crand(2, 3), crand(3)], np.multiply, grad=[0, 1]),
    Case("RealDiv", [crand(2, 3), _away_from_zero(3)], np.true_divide, grad=[0, 1]),
    Case("Div", [crand(3), _away_from_zero(3)], np.true_divide, grad=[0, 1]),
    Case("Pow", [_away_from_zero(2, 3), crand(3)], np.power, grad=[0, 1]),
    Case("SquaredDifference", [crand(2, 3), crand(3)],
         lambda a, b: (a - b) * np.conj(a - b)),
    Case("Neg", [crand(2, 3)], np.negative, grad=[0]),
    Case("Square", [crand(2, 3)], np.square, grad=[0]),
    Case("Sqrt", [_away_from_zero(2, 3)], np.sqrt, grad=[0]),
    Case("Rsqrt", [_away_from_zero(2, 3)], lambda z: 1 / np.sqrt(z), grad=[0]),
    Case("Exp", [crand(2, 3)], np.exp, grad=[0]),
    Case("Expm1", [crand(2, 3)], np.expm1, grad=[0]),
    Case("Log", [_away_from_zero(2, 3)], np.log, grad=[0]),
    Case("Log1p", [crand(2, 3, low=-0.4, high=0.6)], np.log1p, grad=[0]),
    Case("Sign", [_away_from_zero(2, 3)], lambda z: z / np.abs(z)),
    Case("Reciprocal", [_away_from_zero(2, 3)], np.reciprocal, grad=[0]),
    Case("Sigmoid", [crand(2, 3)], lambda z: 1 / (1 + np.exp(-z)), grad=[0]),
    Case("Tanh", [crand(2, 3)], np.tanh, grad=[0]),
    Case("Sin", [crand(2, 3)], np.sin, grad=[0]),
    Case("Cos", [crand(2, 3)], np.cos, grad=[0]),
    Case("Tan", [crand(2, 3)], np.tan, grad=[0]),
    Case("Asin", [crand(2, 3, low=-0.5, high=0.5)], np.arcsin, grad=[0]),
    Case("Acos", [crand(2, 3, low=-0.5, high=0.5)], np.arccos, grad=[0]),
    Case("Atan", [crand(2, 3, low=-0.5, high=0.5)], np.arctan, grad=[0]),
    Case("Sinh", [crand(2, 3)], np.sinh, grad=[0]),
    Case("Cosh", [crand(2, 3)], np.cosh, grad=[0]),
    Case("Asinh", [crand(2, 3, low=-0.5, high=0.5)], np.arcsinh, grad=[0]),
    Case("Acosh", [crand(2, 3, low=1.5, high=2.5)], np.arccosh, grad=[0]),
    Case("Atanh", [crand(2, 3, low=-0.5, high=0.5)], np.arctanh, grad=[0]),
    Case("Equal", [np.array([1 + 2j, 3j, 1]), np.array([1 + 2j, 3, 1])], np.equal),
    Case("NotEqual", [np.array([1 + 2j, 3j, 1]), np.array([1 + 2j, 3, 1])], np.not_equal),
    Case("AddN", [crand(2, 3), crand(2, 3)], np.add, grad=[0, 1]),
    Case("Cast", [crand(2, 3)], np.real, attrs={"DstT": dtypes.float64}, grad=[0]),
    Case("Cast", [rand(2, 3)], lambda x: x.astype(np.complex128),
         attrs={"DstT": dtypes.complex128}, grad=[0]),
    Case("Cast", [crand(3)], lambda z: z.astype(np.complex64),
         attrs={"DstT": dtypes.complex64}, rtol=1e-6),
    Case("MatMul", [crand(3, 4), crand(4, 2)], np.matmul, grad=[0, 1]),
    Case("MatMul", [crand(4, 3), crand(2, 4)], lambda a, b: a.T @ b.T,
         attrs={"transpose_a": True, "transpose_b": True}, grad=[0, 1]),
    Case("BatchMatMulV2", [crand(2, 3, 4), crand(4, 2)], np.matmul, grad=[0, 1]),
    Case("BatchMatMulV2", [crand(2, 4, 3), crand(2, 2, 4)],
         lambda a, b: np.conj(np.swapaxes(a, -1, -2)) @ np.conj(np.swapaxes(b, -1, -2)),
         attrs={"adj_x": True, "adj_y": True}, grad=[0, 1]),
    Case("Sum", [crand(2, 3), np.array([1], np.int32)], lambda z, a: z.sum(axis=1), grad=[0]),
    Case("Mean", [crand(2, 3), np.array([0], np.int32)], lambda z, a: z.mean(axis=0), grad=[0]),
    Case("Prod", [crand(2, 3), np.array([1], np.int32)], lambda z, a: z.prod(axis=1), grad=[0]),
]

CASES += [
    Case("Cumsum", [crand(2, 4), np.array(1, np.int32)], lambda z, a: np.cumsum(z, axis=1),
         grad=[0]),
    Case("Cumprod", [crand(2, 4), np.array(-1, np.int32)], lambda z, a: np.cumprod(z, axis=-1),
         attrs={"reverse": False}, grad=[0]),
]

CASES += [
    Case("ConjugateTranspose", [crand(2, 3, 4), np.array([2, 0, 1], np.int32)],
         lambda z, p: np.conj(np.transpose(z, p)), grad=[0]),
    Case("ConjugateTranspose", [rand(2, 3), np.array([1, 0], np.int32)],
         lambda x, p: x.T, grad=[0]),
]

CASES += [
    Case("BiasAdd", [crand(2, 3), crand(3)], lambda z, b: z + b, grad=[0, 1]),
    Case("BiasAddGrad", [crand(2, 3, 4)], lambda g: g.sum(axis=(0, 1))),
]

_SEGMENTS = np.array([0, 0, 2], np.int32)  # segment 1 is empty

CASES += [
    Case("SegmentSum", [crand(3, 2), _SEGMENTS],
         lambda z, s: np.stack([z[0] + z[1], 0 * z[0], z[2]]), grad=[0]),
    Case("SegmentMean", [crand(3, 2), _SEGMENTS],
         lambda z, s: np.stack([(z[0] + z[1]) / 2, 0 * z[0], z[2]]), grad=[0]),
]
