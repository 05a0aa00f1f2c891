"""float64 numpy references for the 3-D convolution and pooling ops (direct loops and einsum),
shared by test_conv3d_ops.py and the conformance cases in op_cases_conv3d.py. Everything is
computed in NDHWC; NCDHW tensors are transposed in and out."""

import itertools

import numpy as np

from conv_reference import window


def to_ndhwc(x, data_format):
    return x if data_format == "NDHWC" else x.transpose(0, 2, 3, 4, 1)


def from_ndhwc(x, data_format):
    return x if data_format == "NDHWC" else x.transpose(0, 4, 1, 2, 3)


def geometry(in_dhw, k_dhw, strides, dilations, padding):
    """Per spatial dim: (out, pad_before, pad_after), by TensorFlow's rules."""
    return [window(in_dhw[d], k_dhw[d], strides[d], dilations[d], padding) for d in range(3)]


def _patch(xp, o, k, strides, dilations):
    """The [N, kd, kh, kw, C] window of padded NDHWC `xp` for output position o."""
    index = [slice(None)]
    for d in range(3):
        start = o[d] * strides[d]
        index.append(slice(start, start + (k[d] - 1) * dilations[d] + 1, dilations[d]))
    return xp[tuple(index) + (slice(None),)]


def _padded(shape, geo):
    n, c = shape[0], shape[4]
    return (n,) + tuple(shape[1 + d] + geo[d][1] + max(geo[d][2], 0) for d in range(3)) + (c,)


def _pad(x, geo):
    return np.pad(x, [(0, 0)] + [(g[1], max(g[2], 0)) for g in geo] + [(0, 0)])


def _crop(xp, shape, geo):
    return xp[:, geo[0][1]:geo[0][1] + shape[1], geo[1][1]:geo[1][1] + shape[2],
              geo[2][1]:geo[2][1] + shape[3], :]


def conv3d_ref(x, f, strides=(1, 1, 1), padding="VALID", dilations=(1, 1, 1),
               data_format="NDHWC"):
    x = to_ndhwc(x, data_format)
    geo = geometry(x.shape[1:4], f.shape[:3], strides, dilations, padding)
    xp = _pad(x, geo)
    out = np.zeros((x.shape[0],) + tuple(g[0] for g in geo) + (f.shape[4],))
    for o in itertools.product(*(range(g[0]) for g in geo)):
        p = _patch(xp, o, f.shape[:3], strides, dilations)
        out[(slice(None),) + o] = np.einsum("ndhwc,dhwco->no", p, f)
    return from_ndhwc(out, data_format)


def conv3d_backprop_input_ref(in_shape, f, dy, strides=(1, 1, 1), padding="VALID",
                              dilations=(1, 1, 1), data_format="NDHWC"):
    """Scatters each output gradient back over its window (the adjoint of conv3d_ref)."""
    shape = to_ndhwc(np.zeros(in_shape), data_format).shape
    dy = to_ndhwc(dy, data_format)
    geo = geometry(shape[1:4], f.shape[:3], strides, dilations, padding)
    dxp = np.zeros(_padded(shape, geo))
    for o in itertools.product(*(range(g[0]) for g in geo)):
        view = _patch(dxp, o, f.shape[:3], strides, dilations)
        view += np.einsum("no,dhwco->ndhwc", dy[(slice(None),) + o], f)
    return from_ndhwc(_crop(dxp, shape, geo), data_format)


def conv3d_backprop_filter_ref(x, f_shape, dy, strides=(1, 1, 1), padding="VALID",
                               dilations=(1, 1, 1), data_format="NDHWC"):
    x = to_ndhwc(x, data_format)
    dy = to_ndhwc(dy, data_format)
    geo = geometry(x.shape[1:4], f_shape[:3], strides, dilations, padding)
    xp = _pad(x, geo)
    df = np.zeros(f_shape)
    for o in itertools.product(*(range(g[0]) for g in geo)):
        p = _patch(xp, o, f_shape[:3], strides, dilations)
        df += np.einsum("ndhwc,no->dhwco", p, dy[(slice(None),) + o])
    return df


def _windows(shape, ksize, strides, padding):
    """For each output position: the clipped input ranges of its window."""
    geo = geometry(shape[1:4], ksize, strides, (1, 1, 1), padding)
    for o in itertools.product(*(range(g[0]) for g in geo)):
        ranges = []
        for d in range(3):
            start = o[d] * strides[d] - geo[d][1]
            ranges.append(slice(max(start, 0), min(start + ksize[d], shape[1 + d])))
        yield o, tuple(ranges), tuple(g[0] for g in geo)


def pool3d_ref(x, ksize, strides, padding, kind="max", data_format="NDHWC"):
    x = to_ndhwc(x, data_format)
    out = None
    for o, ranges, out_dhw in _windows(x.shape, ksize, strides, padding):
        if out is None:
            out = np.zeros((x.shape[0],) + out_dhw + (x.shape[4],), x.dtype)
        win = x[(slice(None),) + ranges]
        out[(slice(None),) + o] = win.max(axis=(1, 2, 3)) if kind == "max" else win.mean(
            axis=(1, 2, 3))
    return from_ndhwc(out, data_format)


def pool3d_grad_ref(x, dy, ksize, strides, padding, kind="max", data_format="NDHWC"):
    """The gradient of pool3d_ref: to each window's first maximum, or spread evenly."""
    x = to_ndhwc(x, data_format)
    dy = to_ndhwc(dy, data_format)
    dx = np.zeros(x.shape)
    for o, ranges, _ in _windows(x.shape, ksize, strides, padding):
        g = dy[(slice(None),) + o]
        if kind == "avg":
            count = np.prod([r.stop - r.start for r in ranges])
            dx[(slice(None),) + ranges] += g[:, None, None, None, :] / count
            continue
        win = x[(slice(None),) + ranges]
        for n in range(x.shape[0]):
            for c in range(x.shape[4]):
                flat = np.argmax(win[n, ..., c])
                z, y, w = np.unravel_index(flat, win.shape[1:4])
                dx[n, ranges[0].start + z, ranges[1].start + y, ranges[2].start + w, c] += g[n, c]
    return from_ndhwc(dx, data_format)
