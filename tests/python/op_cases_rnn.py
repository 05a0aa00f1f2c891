"""Conformance cases for the fused LSTM ops (see op_cases.py). Their gradients flow from cs and h
only, not from the first output these cases would check, so test_lstm_ops.py checks them
against finite differences instead."""

import numpy as np

from lstm_reference import IFCO, block_backward, block_forward, cell_backward, cell_forward
from op_cases import Case, rand

_B, _I, _N, _T = 2, 3, 4, 3
_X = rand(_B, _I)
_STATE = [rand(_B, _N), rand(_B, _N)]
_W, _PEEP, _BIAS = rand(_I + _N, 4 * _N), [rand(_N), rand(_N), rand(_N)], rand(4 * _N)
_CELL = [_X] + _STATE + [_W] + _PEEP + [_BIAS]
_PEEPHOLE_CLIP = {"use_peephole": True, "cell_clip": 0.5, "forget_bias": 0.3}

_SEQ = [rand(_T, _B, _I)] + _STATE + [_W] + _PEEP + [_BIAS]
_LEN = np.array(_T, np.int64)
_SHORT = np.array(2, np.int64)


def _cell_grad_inputs(attrs):
    outputs = cell_forward(*_CELL, forget_bias=attrs.get("forget_bias", 1.0),
                           cell_clip=attrs.get("cell_clip", 3.0),
                           use_peephole=attrs.get("use_peephole", False))
    return _CELL + list(outputs[:6]) + [rand(_B, _N), rand(_B, _N)]


def _block_grad_inputs(seq_len, layout_kwargs):
    outputs = block_forward(seq_len, *_SEQ, use_peephole=True, **layout_kwargs)
    return [seq_len] + _SEQ + list(outputs) + [rand(_T, _B, _N), rand(_T, _B, _N)]


def _cell_grad_ref(use_peephole):
    def ref(x, cs_prev, h_prev, w, wci, wcf, wco, b, i, cs, f, o, ci, co, cs_grad, h_grad):
        return cell_backward(cs_prev, wci, wcf, wco, i, cs, f, o, ci, co, cs_grad, h_grad,
                             use_peephole)
    return ref


_V2 = {"forget_bias": 0.0, "cell_clip": 0.0, "layout": IFCO}
_V2_GRAD = {"layout": IFCO}

CASES = [
    Case("LSTMBlockCell", _CELL, lambda *a: cell_forward(*a), outputs=7),
    Case("LSTMBlockCell", _CELL, lambda *a: cell_forward(*a, **_PEEPHOLE_CLIP), _PEEPHOLE_CLIP,
         outputs=7),
    Case("LSTMBlockCell", [a.astype(np.float32) for a in _CELL],
         lambda *a: tuple(v.astype(np.float32) for v in cell_forward(*a, cell_clip=-1.0)),
         {"cell_clip": -1.0}, rtol=1e-5, atol=1e-6, outputs=7),
    Case("LSTMBlockCellGrad", _cell_grad_inputs({}), _cell_grad_ref(False),
         {"use_peephole": False}, outputs=5),
    Case("LSTMBlockCellGrad", _cell_grad_inputs(_PEEPHOLE_CLIP), _cell_grad_ref(True),
         {"use_peephole": True}, outputs=5),
    Case("BlockLSTM", [_LEN] + _SEQ, lambda s, *a: block_forward(s, *a), outputs=7),
    Case("BlockLSTM", [_SHORT] + _SEQ, lambda s, *a: block_forward(s, *a, **_PEEPHOLE_CLIP),
         _PEEPHOLE_CLIP, outputs=7),
    Case("BlockLSTMV2", [_LEN] + _SEQ, lambda s, *a: block_forward(s, *a, **_V2), outputs=7),
    Case("BlockLSTMV2", [_SHORT] + _SEQ,
         lambda s, *a: block_forward(s, *a, use_peephole=True, **_V2),
         {"use_peephole": True}, outputs=7),
    Case("BlockLSTMGrad", _block_grad_inputs(_LEN, {}),
         lambda *a: block_backward(*a, use_peephole=True), {"use_peephole": True}, outputs=8),
    Case("BlockLSTMGrad", _block_grad_inputs(_SHORT, {}),
         lambda *a: block_backward(*a, use_peephole=True), {"use_peephole": True}, outputs=8),
    Case("BlockLSTMGradV2", _block_grad_inputs(_SHORT, _V2),
         lambda *a: block_backward(*a, use_peephole=True, **_V2_GRAD), {"use_peephole": True},
         outputs=8),
]
