"""Conformance cases for every registered op: inputs, attrs and a numpy reference.

test_op_conformance.py runs each case on every device, checks the result against the reference,
and checks gradients against finite differences. Every op in the registry needs a case here or an
entry in EXEMPT saying where it is tested instead.
"""

import numpy as np

RNG = np.random.default_rng(1234)


def rand(*shape, dtype=np.float64, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(dtype)


class Case:
    """One run of an op. `ref(*inputs)` returns the expected output (or a tuple of them).
    `grad` lists the input indices whose gradients are checked (float64 inputs). Ops whose
    inputs or outputs cannot be fed or fetched (variants) give `build(*placeholders)`, which
    returns the Operation whose outputs are checked, built around `op`."""

    def __init__(self, op, inputs, ref, attrs=None, grad=(), rtol=1e-6, atol=1e-6, outputs=1,
                 build=None):
        self.op = op
        self.build = build
        self.inputs = inputs
        self.ref = ref
        self.attrs = attrs or {}
        self.grad = tuple(grad)
        self.rtol = rtol
        self.atol = atol
        self.outputs = outputs

    def __repr__(self):
        shapes = ",".join(str(np.shape(x)) for x in self.inputs)
        return f"{self.op}({shapes})"


CASES = [
    Case("Identity", [rand(3, 4)], lambda x: x, grad=[0]),
    Case("StopGradient", [rand(2, 3)], lambda x: x),
    Case("AddN", [rand(2, 3), rand(2, 3), rand(2, 3)], lambda a, b, c: a + b + c,
         grad=[0, 1, 2]),
    Case("BroadcastGradientArgs", [np.array([2, 1, 3], np.int32), np.array([4, 1], np.int32)],
         lambda a, b: (np.array([1], np.int32), np.array([0, 2], np.int32)), outputs=2),
]

# Ops tested elsewhere, with where.
EXEMPT = {
    "Const": "tests/python/test_graph.py (and every other test)",
    "Placeholder": "tests/python/test_session.py (feeds and missing-feed errors)",
    "PlaceholderWithDefault": "tests/python/test_session.py",
    "NoOp": "tests/python/test_session.py (fetching operations)",
    "VarHandleOp": "tests/python/test_variables.py",
    "ReadVariableOp": "tests/python/test_variables.py, gradients in tests/python/test_gradients.py",
    "AssignVariableOp": "tests/python/test_variables.py",
    "AssignAddVariableOp": "tests/python/test_variables.py",
    "AssignSubVariableOp": "tests/python/test_variables.py",
    "VarIsInitializedOp": "tests/python/test_variables.py",
    "ReportUninitializedVariables": "tests/python/test_variables.py",
    "ResourceApplyGradientDescent": "tests/python/test_optimizers.py (update rules by formula)",
    "ResourceApplyMomentum": "tests/python/test_optimizers.py",
    "ResourceApplyAdam": "tests/python/test_optimizers.py",
    "ResourceApplyRMSProp": "tests/python/test_optimizers.py",
    "ResourceApplyCenteredRMSProp": "tests/python/test_optimizers.py",
    "ResourceApplyAdagrad": "tests/python/test_optimizers.py",
}

# Differentiable ops whose gradients are not written yet (the training work adds them and
# removes the names here; the conformance test fails if an op here gains a gradient).
GRADIENT_PENDING = set()

from op_cases_math import CASES as _MATH_CASES, GRADIENT_PENDING as _MATH_PENDING  # noqa: E402

CASES += _MATH_CASES
GRADIENT_PENDING |= _MATH_PENDING

from op_cases_array import CASES as _ARRAY_CASES, GRADIENT_PENDING as _ARRAY_PENDING  # noqa: E402

CASES += _ARRAY_CASES
GRADIENT_PENDING |= _ARRAY_PENDING

from op_cases_reduce import (CASES as _REDUCE_CASES, EXEMPT as _REDUCE_EXEMPT,  # noqa: E402
                             GRADIENT_PENDING as _REDUCE_PENDING)

CASES += _REDUCE_CASES
EXEMPT.update(_REDUCE_EXEMPT)
GRADIENT_PENDING |= _REDUCE_PENDING

from op_cases_conv import CASES as _CONV_CASES  # noqa: E402

CASES += _CONV_CASES

from op_cases_nn import CASES as _NN_CASES  # noqa: E402

CASES += _NN_CASES

from op_cases_math_functions import (CASES as _MATH_FUNCTION_CASES,  # noqa: E402
                                     GRADIENT_PENDING as _MATH_FUNCTION_PENDING)

CASES += _MATH_FUNCTION_CASES
GRADIENT_PENDING |= _MATH_FUNCTION_PENDING

from op_cases_linalg import CASES as _LINALG_CASES  # noqa: E402

CASES += _LINALG_CASES

from op_cases_conv3d import CASES as _CONV3D_CASES  # noqa: E402

CASES += _CONV3D_CASES

from op_cases_norm import CASES as _NORM_CASES  # noqa: E402

CASES += _NORM_CASES

from op_cases_sampling import CASES as _SAMPLING_CASES, EXEMPT as _SAMPLING_EXEMPT  # noqa: E402

CASES += _SAMPLING_CASES
EXEMPT.update(_SAMPLING_EXEMPT)

from op_cases_list import CASES as _LIST_CASES  # noqa: E402

CASES += _LIST_CASES

from op_cases_control_flow import (CASES as _CONTROL_FLOW_CASES,  # noqa: E402
                                   EXEMPT as _CONTROL_FLOW_EXEMPT,
                                   GRADIENT_PENDING as _CONTROL_FLOW_PENDING)

CASES += _CONTROL_FLOW_CASES
EXEMPT.update(_CONTROL_FLOW_EXEMPT)
GRADIENT_PENDING |= _CONTROL_FLOW_PENDING

from op_cases_debug import CASES as _DEBUG_CASES, EXEMPT as _DEBUG_EXEMPT  # noqa: E402

CASES += _DEBUG_CASES
EXEMPT.update(_DEBUG_EXEMPT)

from op_cases_indexing import CASES as _INDEXING_CASES, EXEMPT as _INDEXING_EXEMPT  # noqa: E402

CASES += _INDEXING_CASES
EXEMPT.update(_INDEXING_EXEMPT)

from op_cases_string import CASES as _STRING_CASES, EXEMPT as _STRING_EXEMPT  # noqa: E402

CASES += _STRING_CASES
EXEMPT.update(_STRING_EXEMPT)

from op_cases_data import CASES as _DATA_CASES  # noqa: E402

CASES += _DATA_CASES

from op_cases_data_more import CASES as _DATA_MORE_CASES  # noqa: E402

CASES += _DATA_MORE_CASES

from op_cases_image import (CASES as _IMAGE_CASES,  # noqa: E402
                            GRADIENT_PENDING as _IMAGE_PENDING)

CASES += _IMAGE_CASES
GRADIENT_PENDING |= _IMAGE_PENDING

from op_cases_training import EXEMPT as _TRAINING_EXEMPT  # noqa: E402

EXEMPT.update(_TRAINING_EXEMPT)

from op_cases_interop import CASES as _INTEROP_CASES, EXEMPT as _INTEROP_EXEMPT  # noqa: E402

CASES += _INTEROP_CASES
EXEMPT.update(_INTEROP_EXEMPT)

from op_cases_sequence import CASES as _SEQUENCE_CASES, EXEMPT as _SEQUENCE_EXEMPT  # noqa: E402

CASES += _SEQUENCE_CASES
EXEMPT.update(_SEQUENCE_EXEMPT)

from op_cases_summary import CASES as _SUMMARY_CASES, EXEMPT as _SUMMARY_EXEMPT  # noqa: E402

CASES += _SUMMARY_CASES
EXEMPT.update(_SUMMARY_EXEMPT)

from op_cases_complex import CASES as _COMPLEX_CASES  # noqa: E402

CASES += _COMPLEX_CASES

from op_cases_horovod import CASES as _HOROVOD_CASES  # noqa: E402

CASES += _HOROVOD_CASES

from op_cases_queues import CASES as _QUEUE_CASES, EXEMPT as _QUEUE_EXEMPT  # noqa: E402

CASES += _QUEUE_CASES
EXEMPT.update(_QUEUE_EXEMPT)

from op_cases_rnn import CASES as _RNN_CASES  # noqa: E402

CASES += _RNN_CASES

from op_cases_imagesignal import CASES as _IMAGESIGNAL_CASES  # noqa: E402

CASES += _IMAGESIGNAL_CASES

from op_cases_nnbreadth import CASES as _NNBREADTH_CASES  # noqa: E402

CASES += _NNBREADTH_CASES

from op_cases_lookup import CASES as _LOOKUP_CASES, EXEMPT as _LOOKUP_EXEMPT  # noqa: E402

CASES += _LOOKUP_CASES
EXEMPT.update(_LOOKUP_EXEMPT)

from op_cases_mathbreadth import CASES as _MATHBREADTH_CASES, EXEMPT as _MATHBREADTH_EXEMPT  # noqa: E402

CASES += _MATHBREADTH_CASES
EXEMPT.update(_MATHBREADTH_EXEMPT)

from op_cases_fusion import CASES as _FUSION_CASES  # noqa: E402

CASES += _FUSION_CASES

from op_cases_zoo import CASES as _ZOO_CASES  # noqa: E402

CASES += _ZOO_CASES

from op_cases_ragged import CASES as _RAGGED_CASES, EXEMPT as _RAGGED_EXEMPT  # noqa: E402

CASES += _RAGGED_CASES
EXEMPT.update(_RAGGED_EXEMPT)

from op_cases_vecmath import CASES as _VECMATH_CASES  # noqa: E402

CASES += _VECMATH_CASES

from op_cases_pooling import CASES as _POOLING_CASES  # noqa: E402

CASES += _POOLING_CASES

from op_cases_encoder import CASES as _ENCODER_CASES  # noqa: E402

CASES += _ENCODER_CASES

from op_cases_composites import CASES as _COMPOSITE_CASES  # noqa: E402

CASES += _COMPOSITE_CASES
