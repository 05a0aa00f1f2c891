"""numpy references for the fused LSTM ops (LSTMBlockCell, BlockLSTM, BlockLSTMV2 and their
gradient ops), written from TensorFlow's documented step math, shared by the conformance cases
(op_cases_rnn.py) and test_lstm_ops.py."""

import numpy as np

# Which of w's column blocks holds each gate: LSTMBlockCell / BlockLSTM use i, ci, f, o;
# BlockLSTMV2 uses Keras's i, f, ci, o.
ICFO = {"i": 0, "ci": 1, "f": 2, "o": 3}
IFCO = {"i": 0, "f": 1, "ci": 2, "o": 3}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _block(z, layout, gate):
    n = z.shape[1] // 4
    k = layout[gate]
    return z[:, k * n:(k + 1) * n]


def cell_forward(x, cs_prev, h_prev, w, wci, wcf, wco, b, forget_bias=1.0, cell_clip=3.0,
                 use_peephole=False, layout=ICFO):
    """One step: (i, cs, f, o, ci, co, h)."""
    z = np.concatenate([x, h_prev], 1) @ w + b
    i_pre, f_pre = _block(z, layout, "i"), _block(z, layout, "f")
    if use_peephole:
        i_pre = i_pre + cs_prev * wci
        f_pre = f_pre + cs_prev * wcf
    i = _sigmoid(i_pre)
    f = _sigmoid(f_pre + forget_bias)
    ci = np.tanh(_block(z, layout, "ci"))
    cs = ci * i + cs_prev * f
    if cell_clip > 0:
        cs = np.clip(cs, -cell_clip, cell_clip)
    o_pre = _block(z, layout, "o") + (cs * wco if use_peephole else 0)
    o = _sigmoid(o_pre)
    co = np.tanh(cs)
    return i, cs, f, o, ci, co, co * o


def cell_backward(cs_prev, wci, wcf, wco, i, cs, f, o, ci, co, cs_grad, h_grad,
                  use_peephole=False, layout=ICFO):
    """LSTMBlockCellGrad's outputs: (cs_prev_grad, dicfo, wci_grad, wcf_grad, wco_grad)."""
    d_o = o * (1 - o) * h_grad * co
    dcs = (1 - co * co) * h_grad * o + cs_grad
    if use_peephole:
        dcs = dcs + d_o * wco
    dci = (1 - ci * ci) * dcs * i
    df = f * (1 - f) * dcs * cs_prev
    di = i * (1 - i) * dcs * ci
    blocks = {"i": di, "ci": dci, "f": df, "o": d_o}
    dicfo = np.concatenate([blocks[g] for g in sorted(layout, key=layout.get)], 1)
    cs_prev_grad = dcs * f
    zeros = np.zeros_like(wci)
    if not use_peephole:
        return cs_prev_grad, dicfo, zeros, zeros, zeros
    cs_prev_grad = cs_prev_grad + di * wci + df * wcf
    return (cs_prev_grad, dicfo, (di * cs_prev).sum(0), (df * cs_prev).sum(0),
            (d_o * cs).sum(0))


def block_forward(seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b, forget_bias=1.0,
                  cell_clip=3.0, use_peephole=False, layout=ICFO):
    """BlockLSTM's seven outputs, each [time, batch, units]; zeros from step seq_len_max on."""
    outs = [np.zeros(x.shape[:2] + (cs_prev.shape[1],), x.dtype) for _ in range(7)]
    cs, h = cs_prev, h_prev
    for t in range(min(int(seq_len_max), x.shape[0])):
        step = cell_forward(x[t], cs, h, w, wci, wcf, wco, b, forget_bias, cell_clip,
                            use_peephole, layout)
        for out, value in zip(outs, step):
            out[t] = value
        cs, h = step[1], step[6]
    return tuple(outs)


def block_backward(seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b, i, cs, f, o, ci, co, h,
                   cs_grad, h_grad, use_peephole=False, layout=ICFO):
    """BlockLSTMGrad's outputs: the gradients of x, cs_prev, h_prev, w, wci, wcf, wco and b."""
    steps = min(int(seq_len_max), x.shape[0])
    depth = x.shape[2]
    grads = [np.zeros_like(a) for a in (x, cs_prev, h_prev, w, wci, wcf, wco, b)]
    dh_next = np.zeros_like(h_prev)
    dcs_next = np.zeros_like(cs_prev)
    for t in reversed(range(steps)):
        c_in = cs[t - 1] if t > 0 else cs_prev
        h_in = h[t - 1] if t > 0 else h_prev
        dcs_next, dicfo, gi, gf, go = cell_backward(
            c_in, wci, wcf, wco, i[t], cs[t], f[t], o[t], ci[t], co[t], cs_grad[t] + dcs_next,
            h_grad[t] + dh_next, use_peephole, layout)
        xh_grad = dicfo @ w.T
        grads[0][t] = xh_grad[:, :depth]
        dh_next = xh_grad[:, depth:]
        grads[3] += np.concatenate([x[t], h_in], 1).T @ dicfo
        grads[4] += gi
        grads[5] += gf
        grads[6] += go
        grads[7] += dicfo.sum(0)
    grads[1] = dcs_next
    grads[2] = dh_next
    return tuple(grads)
