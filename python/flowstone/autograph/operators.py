"""The runtime half of AutoGraph: what converted code calls in place of `if`, `while`, `for`,
`and`, `or`, `not`, `==` and `x if p else y`. Each looks at its condition (or iterable): a Python
value (an eager tensor included: it has a truth value) runs Python's own control flow, unchanged;
a graph tensor builds the existing tf.cond / tf.while_loop over the statement's functions (no
other mechanism). Messages are TensorFlow AutoGraph's. Loops are in loops.py.
"""

import threading

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import eager as _eager
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops
from flowstone.ops import basic_ops
from flowstone.ops import control_flow_ops
from flowstone.ops import math_ops
from flowstone.ops import tensor_array_ops
from flowstone.ops import variables as _variables
from flowstone.util import nest


class Undefined:
    """The value of a name a converted statement reads before the user's code assigned it."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name):
        self.symbol_name = symbol_name

    def __repr__(self):
        return self.symbol_name


class UndefinedReturnValue:
    """`retval_` before a `return` ran (jumps.py)."""


def ld(frame_locals, name):
    """The value of `name` in the converted function, or Undefined(name)."""
    return frame_locals[name] if name in frame_locals else Undefined(name)


def retval(value):
    """The function's result: None when no `return` ran (Python's)."""
    return None if isinstance(value, UndefinedReturnValue) else value


def is_graph_tensor(value):
    """Whether `value` needs graph control flow: a tensor of a graph (an eager tensor has a
    truth value, so Python's control flow handles it) or a variable read in a graph."""
    if isinstance(value, _variables.Variable):
        return not _ops.executing_eagerly()
    return isinstance(value, _ops.Tensor) and not isinstance(value, _eager.EagerTensor)


def as_tensor(value):
    return value.value() if isinstance(value, _variables.Variable) else value


def check_condition(cond, statement):
    """`cond` as a scalar bool tensor (one element of any rank is reshaped, as in TF)."""
    cond = _ops.convert_to_tensor(as_tensor(cond))
    hint = "to check for None, use `is not None`"
    if cond.dtype != _dtypes.bool:
        raise ValueError(f"condition of {statement} expected to be `tf.bool` scalar, got "
                         f"{cond}; to use as boolean Tensor, use `tf.cast`; {hint}")
    if cond.shape.rank == 0:
        return cond
    known = [d for d in (cond.shape.as_list() if cond.shape.rank is not None else [])
             if d is not None]
    if int(np.prod(known)) > 1:
        raise ValueError(f"condition of {statement} expected to be `tf.bool` scalar, got "
                         f"{cond}; {hint}")
    return array_ops.reshape(cond, [])


# --- logical operators --------------------------------------------------------------------


def not_(value):
    if is_graph_tensor(value):
        return math_ops.logical_not(as_tensor(value))
    return not value


def and_(a, b):
    """`a() and b()`, with b evaluated only when a is true (a tf.cond for a graph tensor)."""
    first = a()
    if is_graph_tensor(first):
        first = as_tensor(first)
        return control_flow_ops.cond(first, lambda: _ops.convert_to_tensor(b()), lambda: first)
    return first and b()


def or_(a, b):
    """`a() or b()`, with b evaluated only when a is false."""
    first = a()
    if is_graph_tensor(first):
        first = as_tensor(first)
        return control_flow_ops.cond(first, lambda: first, lambda: _ops.convert_to_tensor(b()))
    return first or b()


def eq(a, b):
    """`a == b`: elementwise tf.equal when either side is a graph tensor (TF 2's operator)."""
    if is_graph_tensor(a) or is_graph_tensor(b):
        return math_ops.equal(as_tensor(a), as_tensor(b))
    return a == b


def not_eq(a, b):
    if is_graph_tensor(a) or is_graph_tensor(b):
        return math_ops.not_equal(as_tensor(a), as_tensor(b))
    return a != b


def if_exp(cond, if_true, if_false):
    """`if_true() if cond else if_false()`."""
    if is_graph_tensor(cond):
        return control_flow_ops.cond(check_condition(cond, "if expression"), if_true, if_false)
    return if_true() if cond else if_false()


# --- if -----------------------------------------------------------------------------------


class _Staging(threading.local):
    depth = 0  # > 0 while a loop body is traced only to learn its variables' types


staging = _Staging()


def if_stmt(cond, body, orelse, state, names):
    """An `if` whose branches are functions of the statement's state; returns the new state."""
    if is_graph_tensor(cond):
        cond = check_condition(cond, "if statement")
        if staging.depth:
            return _staged_if(body, orelse, state)
        return _tf_if(cond, body, orelse, state, names)
    return body(*state) if cond else orelse(*state)


def _staged_if(body, orelse, state):
    """An `if` in a loop body traced for types only (never run): both branches inline, each
    variable taking whichever branch defines it, so a value one branch leaves undefined (a
    `return` not taken yet) still gets a type."""
    main, other = tuple(body(*state)), tuple(orelse(*state))
    undefined = (Undefined, UndefinedReturnValue)
    return tuple(b if isinstance(a, undefined) else a for a, b in zip(main, other))


def _stageable(value):
    leaves = nest.flatten(value)
    return all(isinstance(v, (_ops.Tensor, _variables.Variable, tensor_array_ops.TensorArray,
                              bool, int, float, str)) or hasattr(v, "__array__") for v in leaves)


def _tf_if(cond, body, orelse, state, names):
    seen = {}  # branch label -> the values it returned, as tensors
    kept = {}  # slot -> a value the branches do not change and tf.cond cannot carry

    templates = {}  # branch label -> its values, TensorArrays as they are

    def branch(fn, label):
        def run():
            start = len(_ops.get_default_graph().get_operations())
            values = list(fn(*state))
            for i, (name, value) in enumerate(zip(names, values)):
                if isinstance(value, Undefined):
                    raise ValueError(f"'{name}' must also be initialized in the {label} branch")
                if isinstance(value, UndefinedReturnValue):
                    raise ValueError(f"the {label} branch must also have a return statement.")
                if value is None:
                    raise ValueError(f"'{name}' is None at the end of the {label} branch.")
                if not _stageable(value):
                    if value is not state[i]:
                        raise TypeError(f"'{name}' is a {type(value).__name__} in the {label} "
                                        "branch of an if statement on a tensor, which tf.cond "
                                        "cannot return; assign it a tensor (or the same object "
                                        "in both branches).")
                    kept[i] = value
                    values[i] = 0
            templates[label] = values
            values = tensor_array_ops.to_flows(values)
            # A cond with no outputs still returns one value, for its side effects to wait on.
            values = [nest.map_structure(lambda v: _ops.convert_to_tensor(as_tensor(v)), v)
                      for v in values] or [_ops.convert_to_tensor(0)]
            values = after_effects(start, values)
            seen[label] = values
            other = seen.get("main" if label == "else" else "else")
            if other is not None:
                _check_branches(names, other if label == "else" else values,
                                values if label == "else" else other)
            return tuple(values)
        return run

    results = control_flow_ops.cond(cond, branch(body, "main"), branch(orelse, "else"))
    if not isinstance(results, (list, tuple)):
        results = (results,)
    results = tensor_array_ops.from_flows(templates["main"], list(results)[:len(state)])
    return tuple(kept.get(i, r) for i, r in enumerate(results))


def after_effects(start, values):
    """`values` made to wait for the stateful ops traced into the current graph since its op
    number `start`. A function body keeps only what its results need; this keeps a converted
    branch's or loop body's side effects (variable updates, prints), as TensorFlow's automatic
    control dependencies keep them."""
    graph = _ops.get_default_graph()
    effects = [op for op in graph.get_operations()[start:]
               if op._node.is_stateful and op.type != "Placeholder"]
    if not effects:
        return values
    with graph.control_dependencies(effects):
        return nest.map_structure(
            lambda v: basic_ops.identity(v) if isinstance(v, _ops.Tensor) else v, values)


def _check_branches(names, main, other):
    for name, a, b in zip(names, main, other):
        try:
            nest.assert_same_structure(a, b, check_types=False)
        except (ValueError, TypeError) as e:
            raise TypeError(f"'{name}' must have the same nested structure in the main and "
                            f"else branches:\n\n{e}") from None
        for x, y in zip(nest.flatten(a), nest.flatten(b)):
            if x.dtype != y.dtype:
                raise TypeError(f"'{name}' has dtype {x.dtype.name} in the main branch, but "
                                f"dtype {y.dtype.name} in the else branch")
