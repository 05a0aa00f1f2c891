"""float64 numpy references for the convolution and pooling ops (direct loops and einsum), shared
by test_conv_ops.py and the conformance cases in op_cases_conv.py. Everything is computed in NHWC;
NCHW tensors are transposed in and out."""

import numpy as np


def to_nhwc(x, data_format):
    return x if data_format == "NHWC" else x.transpose(0, 2, 3, 1)


def from_nhwc(x, data_format):
    return x if data_format == "NHWC" else x.transpose(0, 3, 1, 2)


def window(size, k, stride, dilation, padding, explicit=(0, 0)):
    """TensorFlow's output size and (before, after) padding for one dimension."""
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        return -(-(size - eff + 1) // stride), 0, 0
    if padding == "SAME":
        out = -(-size // stride)
        total = max((out - 1) * stride + eff - size, 0)
        return out, total // 2, total - total // 2
    before, after = explicit
    return (size + before + after - eff) // stride + 1, before, after


def geometry(in_hw, k_hw, strides, dilations, padding):
    """Per spatial dim: (out, pad_before, pad_after). `padding` is a string or 2 pairs."""
    dims = []
    for d in range(2):
        if isinstance(padding, str):
            dims.append(window(in_hw[d], k_hw[d], strides[d], dilations[d], padding))
        else:
            dims.append(window(in_hw[d], k_hw[d], strides[d], dilations[d], "EXPLICIT",
                               padding[d]))
    return dims


def patches(xp, oy, ox, k_hw, strides, dilations):
    """The [N, kh, kw, C] window of padded NHWC input `xp` for output (oy, ox)."""
    y0, x0 = oy * strides[0], ox * strides[1]
    return xp[:, y0:y0 + (k_hw[0] - 1) * dilations[0] + 1:dilations[0],
              x0:x0 + (k_hw[1] - 1) * dilations[1] + 1:dilations[1], :]


def conv_ref(x, f, strides=(1, 1), padding="VALID", dilations=(1, 1), data_format="NHWC",
             depthwise=False):
    x = to_nhwc(x, data_format)
    n, h, w, c = x.shape
    (oh, pt, pb), (ow, pl, pr) = geometry((h, w), f.shape[:2], strides, dilations, padding)
    xp = np.pad(x, ((0, 0), (pt, max(pb, 0)), (pl, max(pr, 0)), (0, 0)))
    out_c = c * f.shape[3] if depthwise else f.shape[3]
    y = np.zeros((n, oh, ow, out_c))
    for oy in range(oh):
        for ox in range(ow):
            p = patches(xp, oy, ox, f.shape[:2], strides, dilations)
            if depthwise:
                y[:, oy, ox] = np.einsum("nhwc,hwcm->ncm", p, f).reshape(n, -1)
            else:
                y[:, oy, ox] = np.einsum("nhwc,hwco->no", p, f)
    return from_nhwc(y, data_format)


def conv_backprop_input_ref(in_shape, f, dy, strides=(1, 1), padding="VALID", dilations=(1, 1),
                            data_format="NHWC", depthwise=False):
    """Scatters each output gradient back over its window (the adjoint of conv_ref)."""
    n, h, w, c = to_nhwc(np.zeros(in_shape), data_format).shape
    dy = to_nhwc(dy, data_format)
    (oh, pt, pb), (ow, pl, pr) = geometry((h, w), f.shape[:2], strides, dilations, padding)
    dxp = np.zeros((n, h + pt + max(pb, 0), w + pl + max(pr, 0), c))
    for oy in range(oh):
        for ox in range(ow):
            view = patches(dxp, oy, ox, f.shape[:2], strides, dilations)
            if depthwise:
                view += np.einsum("ncm,hwcm->nhwc", dy[:, oy, ox].reshape(n, c, -1), f)
            else:
                view += np.einsum("no,hwco->nhwc", dy[:, oy, ox], f)
    return from_nhwc(dxp[:, pt:pt + h, pl:pl + w, :], data_format)


def conv_backprop_filter_ref(x, f_shape, dy, strides=(1, 1), padding="VALID", dilations=(1, 1),
                             data_format="NHWC", depthwise=False):
    x = to_nhwc(x, data_format)
    dy = to_nhwc(dy, data_format)
    n, h, w, c = x.shape
    (oh, pt, pb), (ow, pl, pr) = geometry((h, w), f_shape[:2], strides, dilations, padding)
    xp = np.pad(x, ((0, 0), (pt, max(pb, 0)), (pl, max(pr, 0)), (0, 0)))
    df = np.zeros(f_shape)
    for oy in range(oh):
        for ox in range(ow):
            p = patches(xp, oy, ox, f_shape[:2], strides, dilations)
            if depthwise:
                df += np.einsum("nhwc,ncm->hwcm", p, dy[:, oy, ox].reshape(n, c, -1))
            else:
                df += np.einsum("nhwc,no->hwco", p, dy[:, oy, ox])
    return df


def pool_ref(x, ksize, strides, padding, data_format="NHWC", kind="max"):
    x = to_nhwc(x, data_format)
    n, h, w, c = x.shape
    (oh, pt, pb), (ow, pl, pr) = geometry((h, w), ksize, strides, (1, 1), padding)
    pads = ((0, 0), (pt, max(pb, 0)), (pl, max(pr, 0)), (0, 0))
    xp = np.pad(x.astype(np.float64), pads, constant_values=-np.inf if kind == "max" else 0)
    ones = np.pad(np.ones_like(x, dtype=np.float64), pads)
    y = np.zeros((n, oh, ow, c))
    for oy in range(oh):
        for ox in range(ow):
            p = patches(xp, oy, ox, ksize, strides, (1, 1))
            if kind == "max":
                y[:, oy, ox] = p.max(axis=(1, 2))
            else:
                count = patches(ones, oy, ox, ksize, strides, (1, 1)).sum(axis=(1, 2))
                y[:, oy, ox] = p.sum(axis=(1, 2)) / count
    return from_nhwc(y, data_format)


def pool_grad_ref(x, dy, ksize, strides, padding, data_format="NHWC", kind="max"):
    x = to_nhwc(x, data_format)
    dy = to_nhwc(dy, data_format)
    n, h, w, c = x.shape
    (oh, pt, pb), (ow, pl, pr) = geometry((h, w), ksize, strides, (1, 1), padding)
    pads = ((0, 0), (pt, max(pb, 0)), (pl, max(pr, 0)), (0, 0))
    xp = np.pad(x.astype(np.float64), pads, constant_values=-np.inf)
    valid = np.pad(np.ones_like(x, dtype=np.float64), pads)
    dxp = np.zeros(xp.shape)
    kh, kw = ksize
    rows, cols = np.arange(n)[:, None], np.arange(c)[None, :]
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * strides[0], ox * strides[1]
            window = (slice(None), slice(y0, y0 + kh), slice(x0, x0 + kw), slice(None))
            if kind == "max":
                # np.argmax picks the first maximum in row-major window order, as TensorFlow.
                flat = xp[window].reshape(n, kh * kw, c)
                ky, kx = np.divmod(np.argmax(flat, axis=1), kw)
                np.add.at(dxp, (rows, y0 + ky, x0 + kx, cols), dy[:, oy, ox, :])
            else:
                count = valid[window].sum(axis=(1, 2), keepdims=True)
                dxp[window] += valid[window] * dy[:, oy:oy + 1, ox:ox + 1, :] / count
    return from_nhwc(dxp[:, pt:pt + h, pl:pl + w, :], data_format)
