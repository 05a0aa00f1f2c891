"""Conformance cases for the debugging ops (see op_cases.py); tests/python/test_assertions.py and
tests/python/test_py_func.py cover their messages, printing and failures."""

import numpy as np

from op_cases import Case, rand

CASES = [
    Case("CheckNumerics", [rand(2, 3)], lambda x: x, attrs={"message": "checked"}, grad=[0]),
    Case("Print", [rand(2, 3), rand(2)], lambda x, data: x, attrs={"message": "conformance: "},
         grad=[0]),
    # The text TensorFlow's StringFormat gives for these inputs (checked with TensorFlow 2.21).
    Case("StringFormat", [np.arange(7, dtype=np.int32), np.array(b"hi", dtype=object)],
         lambda x, s: np.array(b'x=[0 1 2 ... 4 5 6] and y="hi"', dtype=object),
         attrs={"template": "x={} and y={}", "placeholder": "{}"}),
    Case("StringFormat", [np.arange(12.0).reshape(3, 4)],
         lambda m: np.array(b"m: [[0 ... 3]\n ...\n [8 ... 11]]", dtype=object),
         attrs={"template": "m: %s", "summarize": 1}),
]

# Ops without outputs to compare, or that run Python code, with where they are tested.
EXEMPT = {
    "Assert": "tests/python/test_assertions.py (messages, summarize, static checks, bypassing)",
    "PrintFormatted": "tests/python/test_assertions.py (tf.print's text, streams, files)",
    "PrintV2": "tests/python/test_assertions.py (the op TensorFlow's tf.print emits)",
    "PyFunc": "tests/python/test_py_func.py (values, errors, threads, gradient overrides)",
    "PyFuncStateless": "tests/python/test_py_func.py",
    "EagerCustomGradient": "tests/python/eager/test_eager_custom_gradient.py (values, gradients "
                           "vs numpy and TensorFlow, lifetimes, errors)",
    "EagerCustomGradientGrad": "tests/python/eager/test_eager_custom_gradient.py",
}
