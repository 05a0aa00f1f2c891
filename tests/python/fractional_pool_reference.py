"""numpy references for fractional pooling over given regions (row and column pooling
sequences), shared by op_cases_nnbreadth.py and test_fractional_pool.py."""

import numpy as np


def regions(seq, size, overlapping):
    return [(seq[i], min(seq[i + 1] if overlapping else seq[i + 1] - 1, size - 1))
            for i in range(len(seq) - 1)]


def pool(x, rows, cols, overlapping, reduce):
    n, h, w, c = x.shape
    out = np.zeros((n, len(rows) - 1, len(cols) - 1, c), x.dtype)
    for i, (r0, r1) in enumerate(regions(rows, h, overlapping)):
        for j, (c0, c1) in enumerate(regions(cols, w, overlapping)):
            out[:, i, j, :] = reduce(x[:, r0:r1 + 1, c0:c1 + 1, :], axis=(1, 2))
    return out


def max_pool_grad_reference(overlapping):
    def ref(x, y, dy, rows, cols):
        dx = np.zeros_like(x)
        n, h, w, c = x.shape
        for i, (r0, r1) in enumerate(regions(rows, h, overlapping)):
            for j, (c0, c1) in enumerate(regions(cols, w, overlapping)):
                for b in range(n):
                    for ch in range(c):
                        window = x[b, r0:r1 + 1, c0:c1 + 1, ch]
                        a, e = np.unravel_index(np.argmax(window == y[b, i, j, ch]), window.shape)
                        dx[b, r0 + a, c0 + e, ch] += dy[b, i, j, ch]
        return dx
    return ref


def avg_pool_grad_reference(overlapping):
    def ref(shape, dy, rows, cols):
        dx = np.zeros(shape, dy.dtype)
        for i, (r0, r1) in enumerate(regions(rows, shape[1], overlapping)):
            for j, (c0, c1) in enumerate(regions(cols, shape[2], overlapping)):
                count = (r1 - r0 + 1) * (c1 - c0 + 1)
                dx[:, r0:r1 + 1, c0:c1 + 1, :] += dy[:, i:i + 1, j:j + 1, :] / count
        return dx
    return ref
