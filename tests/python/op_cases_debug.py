"""Conformance cases for the debugging ops (see op_cases.py); tests/python/test_assertions.py and
tests/python/test_py_func.py cover their messages, printing and failures."""

from op_cases import Case, rand

CASES = [
    Case("CheckNumerics", [rand(2, 3)], lambda x: x, attrs={"message": "checked"}, grad=[0]),
    Case("Print", [rand(2, 3), rand(2)], lambda x, data: x, attrs={"message": "conformance: "},
         grad=[0]),
]

# Ops without outputs to compare, or that run Python code, with where they are tested.
EXEMPT = {
    "Assert": "tests/python/test_assertions.py (messages, summarize, static checks, bypassing)",
    "PrintFormatted": "tests/python/test_assertions.py (tf.print's text, streams, files)",
    "PyFunc": "tests/python/test_py_func.py (values, errors, threads, gradient overrides)",
    "PyFuncStateless": "tests/python/test_py_func.py",
}
