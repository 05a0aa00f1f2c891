"""Conformance cases (see op_cases.py) for the loss ops, the activations and their gradient ops,
and the top-k ops."""

import numpy as np

from op_cases import RNG, Case, rand

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _sparse_xent(logits, labels):
    log_p = _log_softmax(logits)
    onehot = np.eye(logits.shape[1], dtype=logits.dtype)[labels]
    return -(onehot * log_p).sum(axis=1), np.exp(log_p) - onehot


def _xent(logits, labels):
    log_p = _log_softmax(logits)
    return -(labels * log_p).sum(axis=1), np.exp(log_p) - labels


def _distribution(*shape):
    p = rand(*shape, low=0.1, high=1.0)
    return p / p.sum(axis=-1, keepdims=True)


def _away_from(x, kinks, margin=1e-3):
    """x with values within margin of a kink moved off it, so finite differences are smooth."""
    for kink in kinks:
        x = np.where(np.abs(x - kink) < margin, kink + 2 * margin, x)
    return x


def _top_k(x, k):
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, -1), order.astype(np.int32)


def _top_k_grad(grad, indices, shape):
    out = np.zeros(shape, grad.dtype)
    np.put_along_axis(out, indices.astype(np.int64), grad, -1)
    return out


def _in_top_k(predictions, targets, k):
    target_values = predictions[np.arange(len(targets)), targets][:, None]
    return (predictions > target_values).sum(axis=1) < k


def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def _selu(x):
    return SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0)))


_ACT = rand(3, 5, low=-8.0, high=8.0)
_GRADS = rand(3, 5)
_TOP_K_INPUT = rand(3, 7)  # distinct values: no ties for the finite differences to cross
_TOP_K_INDICES = np.argsort(-_TOP_K_INPUT, axis=-1)[:, :3].astype(np.int32)

CASES = [
    Case("SparseSoftmaxCrossEntropyWithLogits", [rand(4, 5), np.array([0, 4, 2, 2], np.int64)],
         _sparse_xent, grad=[0], outputs=2),
    Case("SparseSoftmaxCrossEntropyWithLogits",
         [rand(3, 6).astype(np.float32), np.array([5, 0, 1], np.int32)],
         lambda x, y: tuple(v.astype(np.float32) for v in _sparse_xent(x.astype(np.float64), y)),
         outputs=2, rtol=1e-5),
    Case("SoftmaxCrossEntropyWithLogits", [rand(4, 5), _distribution(4, 5)], _xent,
         grad=[0, 1], outputs=2),
    Case("L2Loss", [rand(3, 4)], lambda x: (x ** 2).sum() / 2, grad=[0]),
    Case("L2Loss", [rand(0, 3).astype(np.float32)], lambda x: np.float32(0)),
    Case("Relu6", [_away_from(_ACT, [0, 6])], lambda x: np.clip(x, 0, 6), grad=[0]),
    Case("Elu", [_ACT], _elu, grad=[0]),
    Case("Selu", [_away_from(_ACT, [0])], _selu, grad=[0]),
    Case("LeakyRelu", [_away_from(_ACT, [0])], lambda x: np.where(x > 0, x, 0.3 * x),
         attrs={"alpha": 0.3}, grad=[0]),
    Case("LeakyRelu", [_ACT.astype(np.float32)],
         lambda x: np.where(x > 0, x, np.float32(0.2) * x)),
    Case("ReluGrad", [_GRADS, _ACT], lambda g, x: g * (x > 0)),
    Case("Relu6Grad", [_GRADS, _ACT], lambda g, x: g * ((x > 0) & (x < 6))),
    Case("EluGrad", [_GRADS, _elu(_ACT)], lambda g, y: g * np.where(y > 0, 1.0, y + 1.0)),
    Case("SeluGrad", [_GRADS, _selu(_ACT)],
         lambda g, y: g * np.where(y > 0, SELU_SCALE, y + SELU_SCALE * SELU_ALPHA)),
    Case("LeakyReluGrad", [_GRADS, _ACT], lambda g, x: g * np.where(x > 0, 1.0, 0.1),
         attrs={"alpha": 0.1}),
    Case("TopKV2", [_TOP_K_INPUT, np.array(3, np.int32)], _top_k, grad=[0], outputs=2),
    Case("TopKV2", [RNG.integers(0, 4, size=(2, 3, 6)).astype(np.int64), np.array(6, np.int64)],
         _top_k, outputs=2),
    Case("TopKV2", [rand(4).astype(np.float32), np.array(0, np.int32)], _top_k, outputs=2),
    Case("TopKV2Grad", [rand(3, 3), _TOP_K_INDICES, np.array([3, 7], np.int32)], _top_k_grad),
    Case("InTopKV2", [RNG.integers(0, 4, size=(6, 5)).astype(np.float32),
                      np.array([0, 1, 2, 3, 4, 0], np.int32), np.array(2, np.int32)],
         _in_top_k),
    Case("InTopKV2", [rand(3, 4).astype(np.float32), np.array([3, 0, 1], np.int64),
                      np.array(1, np.int64)], _in_top_k),
]
