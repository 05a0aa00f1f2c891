"""Conformance cases (see op_cases.py) for the fused op of the model zoo's encoder,
_FusedLayerNorm (Flowstone's own; TensorFlow has no such op outside its oneDNN build).
test_layer_norm_fusion.py checks it bit for bit against the nodes it replaces."""

import numpy as np

from op_cases import Case, rand


def _layer_norm(x, scale, offset, epsilon=1e-12):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + epsilon) * scale + offset).astype(x.dtype)


CASES = [
    Case("_FusedLayerNorm", [rand(4, 16), rand(16), rand(16)], _layer_norm),
    Case("_FusedLayerNorm", [rand(2, 3, 8, dtype=np.float32), rand(8, dtype=np.float32),
                             rand(8, dtype=np.float32)],
         lambda x, s, o: _layer_norm(x, s, o, 1e-3), attrs={"epsilon": 1e-3}, rtol=1e-5,
         atol=1e-5),
]
