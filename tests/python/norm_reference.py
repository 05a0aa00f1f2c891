"""float64 numpy references for the normalization ops (LRN, FusedBatchNormV3 and their
gradients), shared by op_cases_norm.py and test_nn_extras.py."""

import numpy as np


def lrn_ref(x, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5):
    depth = x.shape[-1]
    sqr_sum = np.zeros_like(x)
    for d in range(depth):
        lo, hi = max(d - depth_radius, 0), min(d + depth_radius + 1, depth)
        sqr_sum[..., d] = (x[..., lo:hi] ** 2).sum(axis=-1)
    return x / (bias + alpha * sqr_sum) ** beta


def lrn_grad_ref(g, x, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5):
    """The vector-Jacobian product of lrn_ref, from the formula's derivative."""
    depth = x.shape[-1]
    norm = np.zeros_like(x)
    for d in range(depth):
        lo, hi = max(d - depth_radius, 0), min(d + depth_radius + 1, depth)
        norm[..., d] = bias + alpha * (x[..., lo:hi] ** 2).sum(axis=-1)
    dx = g * norm ** -beta
    gy = g * x * norm ** (-beta - 1)
    for j in range(depth):
        lo, hi = max(j - depth_radius, 0), min(j + depth_radius + 1, depth)
        dx[..., j] -= 2 * alpha * beta * x[..., j] * gy[..., lo:hi].sum(axis=-1)
    return dx


def _channels_last(x, data_format):
    return x if data_format == "NHWC" else np.moveaxis(x, 1, -1)


def _channels_back(x, data_format):
    return x if data_format == "NHWC" else np.moveaxis(x, -1, 1)


def batch_norm_ref(x, scale, offset, mean, var, epsilon=1e-4, training=True, data_format="NHWC",
                   avg_factor=1.0):
    """(y, batch_mean, batch_variance, reserve_space_1, reserve_space_2, reserve_space_3)."""
    xc = _channels_last(x, data_format)
    axes = tuple(range(xc.ndim - 1))
    if training:
        m, v = xc.mean(axis=axes), xc.var(axis=axes)
        n = xc.size // xc.shape[-1]
        unbiased = v * n / max(n - 1, 1)
        out_mean = (1 - avg_factor) * mean + avg_factor * m if avg_factor != 1 else m
        out_var = (1 - avg_factor) * var + avg_factor * unbiased if avg_factor != 1 else unbiased
    else:
        m, v = mean, var
        out_mean, out_var = mean, var
    y = (xc - m) / np.sqrt(v + epsilon) * scale + offset
    dtype = scale.dtype
    return (_channels_back(y, data_format).astype(x.dtype), out_mean.astype(dtype),
            out_var.astype(dtype), m.astype(dtype), v.astype(dtype), np.zeros(0, dtype))


def batch_norm_grad_ref(dy, x, scale, mean, var, epsilon=1e-4, training=True,
                        data_format="NHWC"):
    dyc, xc = _channels_last(dy, data_format), _channels_last(x, data_format)
    axes = tuple(range(xc.ndim - 1))
    rstd = 1 / np.sqrt(var + epsilon)
    xhat = (xc - mean) * rstd
    dscale = (dy_xhat := (dyc * xhat)).sum(axis=axes)
    doffset = dyc.sum(axis=axes)
    if training:
        dx = scale * rstd * (dyc - dyc.mean(axis=axes) - xhat * dy_xhat.mean(axis=axes))
    else:
        dx = scale * rstd * dyc
    return (_channels_back(dx, data_format), dscale, doffset, np.zeros(0), np.zeros(0))
