"""tf.autograph.experimental: `do_not_convert` (set by the package), the Feature flags, and
set_loop_options, which the converter reads from a loop's body."""

import enum


class Feature(enum.Enum):
    """AutoGraph's optional features. Flowstone's converter always applies what it has (lists
    appended in a tensor loop become TensorArrays, `==` on tensors is elementwise); the flags
    are accepted and change nothing (docs/COMPAT.md)."""
    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"


def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None,
                     shape_invariants=None):
    """Options for the loop whose body calls it (the converter takes the call out of the body
    and hands `maximum_iterations`, `parallel_iterations` and `shape_invariants`, a list of
    (variable, shape) pairs, to the loop). Called outside converted code, it does nothing."""
