"""Conformance entries for the functional ops. Each calls functions of its graph's library, which
a case of inputs and attrs cannot carry, so they are tested, with numpy references and finite
differences, where the functions are traced."""

CASES = []

EXEMPT = {
    "PartitionedCall": "tests/python/test_functions.py (values, captures, nesting, gradients, "
                       "signature errors)",
    "StatefulPartitionedCall": "tests/python/test_functions.py",
    "If": "tests/python/test_control_flow.py (tf.cond with stateful branches, gradients)",
    "StatelessIf": "tests/python/test_control_flow.py (tf.cond, tf.case, gradients)",
    "While": "tests/python/test_control_flow.py (loops over variables, gradients)",
    "StatelessWhile": "tests/python/test_control_flow.py (tf.while_loop)",
}

GRADIENT_PENDING = set()
