"""Conformance cases for the ops that TensorFlow's graphs carry and Flowstone's Python rarely
emits (see op_cases.py); tests/python/interop/ imports such graphs from TensorFlow."""

import numpy as np

from op_cases import Case, rand

CASES = [
    Case("IdentityN", [rand(2, 3), rand(4), np.array([1, -2], np.int32)],
         lambda a, b, c: (a, b, c), outputs=3, grad=[0]),
]

EXEMPT = {}
