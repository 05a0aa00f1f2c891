"""Conformance cases for the incomplete gamma and beta functions, NextAfter, Bitcast and the
fake quantization ops (see op_cases.py); the distribution samplers are random, so their
distributions, seeding and gradients are tested in test_random_distributions.py."""

import numpy as np
from scipy import linalg, special

from flowstone import dtypes

from op_cases import RNG, Case


def _gamma_sample_grad(alpha, sample):
    # x = P^-1(alpha, u) with u fixed: dx/dalpha = -(dP/dalpha) / (dP/dx).
    h = 1e-6 * alpha
    dp_da = (special.gammainc(alpha + h, sample) - special.gammainc(alpha - h, sample)) / (2 * h)
    dp_dx = np.exp((alpha - 1) * np.log(sample) - sample - special.gammaln(alpha))
    return -dp_da / dp_dx


def _igamma_grad_a(a, x):
    h = 1e-6 * a
    return (special.gammainc(a + h, x) - special.gammainc(a - h, x)) / (2 * h)


def _nudge(lo, hi, num_bits=8, narrow_range=False):
    lo, hi = np.float32(lo), np.float32(hi)
    quant_min = np.float32(1 if narrow_range else 0)
    quant_max = np.float32(2 ** num_bits - 1)
    scale = (hi - lo) / (quant_max - quant_min)
    zero_point = np.clip(np.floor(quant_min - lo / scale + np.float32(0.5)), quant_min, quant_max)
    return (quant_min - zero_point) * scale, (quant_max - zero_point) * scale, scale


def _fake_quant(x, lo, hi, **attrs):
    nmin, nmax, scale = _nudge(lo, hi, **attrs)
    clamped = np.clip(x, nmin, nmax)
    return (np.floor((clamped - nmin) * (np.float32(1) / scale) + np.float32(0.5)) * scale +
            nmin).astype(np.float32)


def _fake_quant_grads(g, x, lo, hi, per_channel=False):
    ranges = [_nudge(a, b) for a, b in zip(np.atleast_1d(lo), np.atleast_1d(hi))]
    nmin = np.array([r[0] for r in ranges], np.float32)
    nmax = np.array([r[1] for r in ranges], np.float32)
    below, above = x < nmin, x > nmax
    axes = tuple(range(x.ndim - 1)) if per_channel else None
    dmin = np.where(below, g, 0).sum(axis=axes).astype(np.float32)
    dmax = np.where(above, g, 0).sum(axis=axes).astype(np.float32)
    return np.where(below | above, 0, g).astype(np.float32), dmin, dmax


_QX = np.array([[-7.0, -1.3, 0.0, 0.02], [2.51, 5.9, 6.2, 3.3]], np.float32)
_QG = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]], np.float32)
_QMIN = np.array([-1.0, -2.0, -0.5, 0.1], np.float32)
_QMAX = np.array([1.0, 3.0, 7.0, 2.0], np.float32)

def _lu_ref(a):
    """LAPACK's factors (scipy's lu_factor) and the permutation p with a[p] = L @ U."""
    lus, perms = [], []
    for m in a.reshape((-1,) + a.shape[-2:]):
        lu, pivots = linalg.lu_factor(m)
        perm = list(range(len(m)))
        for i, j in enumerate(pivots):
            perm[i], perm[j] = perm[j], perm[i]
        lus.append(lu)
        perms.append(perm)
    return (np.array(lus).reshape(a.shape),
            np.array(perms, np.int32).reshape(a.shape[:-1]))


_SP_INDICES = np.array([[0, 0], [0, 3], [1, 1], [2, 2], [3, 4]], np.int64)
_SP_VALUES = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
_SP_SHAPE = np.array([4, 5], np.int64)
_i64 = lambda *v: np.array(v, np.int64)  # noqa: E731


def _split_ref(axis, indices, values, shape):
    # Columns [0, 3) and [3, 5).
    first = indices[:, 1] < 3
    second_indices = indices[~first] - [0, 3]
    return (indices[first], second_indices, values[first], values[~first], _i64(4, 3),
            _i64(4, 2))


def _volume_patches_ref(x, ksizes, strides, padding):
    """NDHWC patches by explicit loops, padding as in 3-D convolutions."""
    k, s = ksizes[1:4], strides[1:4]
    spatial = x.shape[1:4]
    if padding == "VALID":
        out = [(n - kk) // ss + 1 for n, kk, ss in zip(spatial, k, s)]
        before = [0, 0, 0]
    else:
        out = [-(-n // ss) for n, ss in zip(spatial, s)]
        before = [max((o - 1) * ss + kk - n, 0) // 2 for o, ss, kk, n in zip(out, s, k, spatial)]
    result = np.zeros((x.shape[0], *out, k[0] * k[1] * k[2] * x.shape[4]), x.dtype)
    for p, i, j in np.ndindex(*out):
        entries = []
        for a, b, c in np.ndindex(*k):
            at = [p * s[0] + a - before[0], i * s[1] + b - before[1], j * s[2] + c - before[2]]
            inside = all(0 <= t < n for t, n in zip(at, spatial))
            entries.append(x[:, at[0], at[1], at[2], :] if inside else
                           np.zeros((x.shape[0], x.shape[4]), x.dtype))
        result[:, p, i, j, :] = np.concatenate(entries, axis=1)
    return result


_VOLUME = RNG.uniform(-1, 1, (2, 3, 4, 3, 2))

_A = np.array([0.5, 1.0, 2.5, 7.0, 30.0, 0.1])
_X = np.array([0.3, 1.5, 2.0, 12.0, 28.0, 0.01])

CASES = [
    Case("Igamma", [_A, _X], special.gammainc, grad=[0, 1], rtol=1e-10, atol=1e-12),
    Case("Igamma", [np.array([[0.5], [3.0]]), np.array([0.2, 4.0, 9.0])], special.gammainc,
         grad=[0, 1], rtol=1e-10, atol=1e-12),
    Case("Igamma", [_A.astype(np.float32), _X.astype(np.float32)],
         lambda a, x: special.gammainc(a.astype(np.float64), x).astype(np.float32),
         rtol=1e-5, atol=1e-6),
    Case("Igammac", [_A, _X], special.gammaincc, grad=[0, 1], rtol=1e-10, atol=1e-12),
    Case("IgammaGradA", [_A, _X], _igamma_grad_a, rtol=1e-6, atol=1e-9),
    Case("RandomGammaGrad", [np.array([0.5, 1.0, 3.0, 10.0]), np.array([0.2, 1.3, 2.0, 12.5])],
         _gamma_sample_grad, rtol=1e-6, atol=1e-9),
    Case("Betainc", [np.array([0.5, 1.0, 2.0, 5.0, 30.0]), np.array([0.5, 3.0, 2.0, 1.5, 20.0]),
                     np.array([0.1, 0.5, 0.9, 0.99, 0.6])],
         special.betainc, grad=[2], rtol=1e-10, atol=1e-12),
    Case("Betainc", [np.float64(2.0), np.array([1.0, 4.0]), np.float64(0.3)], special.betainc,
         grad=[2], rtol=1e-10, atol=1e-12),
    Case("NextAfter", [np.array([1.0, 0.0, -2.5, 3.0]), np.array([2.0, -1.0, -2.5, 0.0])],
         np.nextafter, rtol=0, atol=0),
    Case("NextAfter", [np.array([1.0, 0.0], np.float32), np.array([2.0, -1.0], np.float32)],
         np.nextafter, rtol=0, atol=0),
    Case("FakeQuantWithMinMaxArgs", [_QX], lambda x: _fake_quant(x, -6.0, 6.0), atol=1e-6),
    Case("FakeQuantWithMinMaxArgs", [_QX], lambda x: _fake_quant(x, -1.0, 5.0, num_bits=4,
                                                                 narrow_range=True),
         {"min": -1.0, "max": 5.0, "num_bits": 4, "narrow_range": True}, atol=1e-6),
    Case("FakeQuantWithMinMaxArgsGradient", [_QG, _QX],
         lambda g, x: _fake_quant_grads(g, x, -1.0, 5.0)[0], {"min": -1.0, "max": 5.0}),
    Case("FakeQuantWithMinMaxVars", [_QX, np.float32(-2.0), np.float32(3.0)], _fake_quant,
         atol=1e-6),
    Case("FakeQuantWithMinMaxVarsGradient", [_QG, _QX, np.float32(-2.0), np.float32(3.0)],
         _fake_quant_grads, outputs=3),
    Case("FakeQuantWithMinMaxVarsPerChannel", [_QX, _QMIN, _QMAX],
         lambda x, lo, hi: np.stack([_fake_quant(x[:, c], lo[c], hi[c]) for c in range(4)], 1),
         atol=1e-6),
    Case("FakeQuantWithMinMaxVarsPerChannelGradient", [_QG, _QX, _QMIN, _QMAX],
         lambda g, x, lo, hi: _fake_quant_grads(g, x, lo, hi, per_channel=True), outputs=3),
    Case("Lu", [np.array([[1.0, 2.0, 0.5], [4.0, -1.0, 2.0], [0.3, 3.0, -2.0]])], _lu_ref,
         grad=[0], outputs=2, rtol=1e-10, atol=1e-12),
    Case("Lu", [RNG.uniform(-1, 1, (2, 4, 4))], _lu_ref, grad=[0], outputs=2, rtol=1e-10,
         atol=1e-12),
    Case("SparseSlice", [_SP_INDICES, _SP_VALUES, _SP_SHAPE, _i64(1, 1), _i64(2, 3)],
         lambda i, v, s, start, size: (np.array([[0, 0], [1, 1]], np.int64), v[[2, 3]],
                                       _i64(2, 3)), outputs=3),
    Case("SparseSlice", [_SP_INDICES, _SP_VALUES, _SP_SHAPE, _i64(3, 0), _i64(5, 9)],
         lambda i, v, s, start, size: (np.array([[0, 4]], np.int64), v[[4]], _i64(1, 5)),
         outputs=3),
    Case("SparseSliceGrad", [np.array([7.0, 8.0]), _SP_INDICES, _i64(1, 1),
                             np.array([[0, 0], [1, 1]], np.int64)],
         lambda g, i, start, o: np.array([0.0, 0.0, 7.0, 8.0, 0.0])),
    Case("SparseSplit", [np.int64(1), _SP_INDICES, _SP_VALUES, _SP_SHAPE], _split_ref,
         {"num_split": 2}, outputs=6),
    Case("SparseReduceSumSparse", [_SP_INDICES, _SP_VALUES, _SP_SHAPE, np.array([1], np.int32)],
         lambda i, v, s, a: (np.array([[0], [1], [2], [3]], np.int64), np.array([3.0, 3, 4, 5]),
                             _i64(4)), outputs=3),
    Case("SparseReduceSumSparse", [_SP_INDICES, _SP_VALUES, _SP_SHAPE, np.array([0], np.int32)],
         lambda i, v, s, a: (np.array([[0, 0], [0, 1], [0, 2], [0, 3], [0, 4]], np.int64),
                             np.array([1.0, 3, 4, 2, 5]), _i64(1, 5)),
         {"keep_dims": True}, outputs=3),
    Case("SparseReduceMaxSparse",
         [_SP_INDICES, np.array([4, -2, 3, 9, 1], np.int32), _SP_SHAPE, np.array([-1], np.int32)],
         lambda i, v, s, a: (np.array([[0], [1], [2], [3]], np.int64),
                             np.array([4, 3, 9, 1], np.int32), _i64(4)), outputs=3),
    Case("DenseCountSparseOutput",
         [np.array([[1, 2, 2], [0, 5, 1]], np.int32), np.zeros(0, np.int32)],
         lambda v, w: (np.array([[0, 1], [0, 2], [1, 0], [1, 1], [1, 5]], np.int64),
                       np.array([1, 2, 1, 1, 1], np.int32), _i64(2, 6)),
         {"binary_output": False}, outputs=3),
    Case("DenseCountSparseOutput",
         [np.array([3, 1, 3, 7], np.int64), np.array([0.5, 1.0, 2.0, 4.0])],
         lambda v, w: (np.array([[1], [3]], np.int64), np.array([1.0, 2.5]), _i64(5)),
         {"binary_output": False, "maxlength": 5}, outputs=3),
    Case("SparseCountSparseOutput",
         [_SP_INDICES, np.array([2, 2, 0, 1, 3], np.int64), _SP_SHAPE, np.zeros(0, np.int64)],
         lambda i, v, s, w: (np.array([[0, 2], [1, 0], [2, 1], [3, 3]], np.int64),
                             np.array([1, 1, 1, 1], np.int64), _i64(4, 8)),
         {"binary_output": True, "minlength": 8}, outputs=3),
    Case("MatrixSquareRoot", [np.array([[4.0, 1.0, 0.2], [0.5, 3.0, -0.3], [0.1, 0.4, 2.0]])],
         lambda a: linalg.sqrtm(a).real, grad=[0], rtol=1e-10, atol=1e-12),
    Case("MatrixSquareRoot", [np.array([[[2.0, 0.3], [0.1, 1.0]], [[5.0, -1.0], [2.0, 3.0]]])],
         lambda a: np.stack([linalg.sqrtm(m).real for m in a]), grad=[0], rtol=1e-10,
         atol=1e-12),
    Case("ExtractVolumePatches", [_VOLUME],
         lambda x: _volume_patches_ref(x, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "VALID"),
         {"ksizes": [1, 2, 2, 2, 1], "strides": [1, 1, 2, 1, 1], "padding": "VALID"}, grad=[0]),
    Case("ExtractVolumePatches", [_VOLUME],
         lambda x: _volume_patches_ref(x, [1, 2, 3, 2, 1], [1, 2, 2, 2, 1], "SAME"),
         {"ksizes": [1, 2, 3, 2, 1], "strides": [1, 2, 2, 2, 1], "padding": "SAME"}, grad=[0]),
    Case("MatrixLogarithm", [np.array([[2.0 + 0.5j, 0.3], [0.1 - 0.2j, 1.5 + 0j]])],
         lambda a: linalg.logm(a), rtol=1e-10, atol=1e-12),
    Case("MatrixLogarithm", [np.array([[4.0, 1.0, 0.0], [0.0, 3.0, 0.5], [0.2, 0.0, 0.1]],
                                      np.complex64)],
         lambda a: linalg.logm(a.astype(np.complex128)).astype(np.complex64), rtol=1e-5,
         atol=1e-5),
    # TensorFlow's fingerprints of these strings (FarmHash Fingerprint64, little-endian bytes).
    Case("Fingerprint", [np.array([b"", b"a", b"hello wo", b"0123456789abcdefg"], dtype=object),
                         np.array(b"farmhash64", dtype=object)],
         lambda d, m: np.array([[79, 64, 144, 47, 59, 106, 225, 154],
                                [227, 117, 223, 182, 101, 66, 69, 179],
                                [139, 205, 238, 164, 114, 27, 48, 50],
                                [74, 210, 73, 164, 135, 255, 221, 166]], np.uint8)),
    Case("Bitcast", [np.array([1.0, -2.5, 3e38], np.float32)],
         lambda x: x.view(np.int32), {"type": dtypes.int32}),
    Case("Bitcast", [np.array([[1.5, 2.0], [3.0, -1.0]])],
         lambda x: x.view(np.uint8).reshape(2, 2, 8), {"type": dtypes.uint8}),
    Case("Bitcast", [np.arange(16, dtype=np.uint8).reshape(2, 8)],
         lambda x: x.view(np.int64).reshape(2), {"type": dtypes.int64}),
]

EXEMPT = {op: "tests/python/test_random_distributions.py (distributions, seeding, gradients)"
          for op in ["RandomGamma", "RandomPoissonV2", "StatelessRandomGammaV2",
                     "StatelessRandomPoisson", "StatelessRandomBinomial",
                     "StatelessParameterizedTruncatedNormal", "StatelessRandomUniformFullInt",
                     "RngReadAndSkip"]}
EXEMPT["Timestamp"] = "tests/python/test_quant_and_tf1_helpers.py (the clock moves)"
