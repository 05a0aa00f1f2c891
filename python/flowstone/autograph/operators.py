"""The runtime half of AutoGraph: what converted code calls in place of `if`, `while`, `for`,
`and`, `or`, `not`, `==` and `x if p else y`. Each looks at its condition (or iterable): a Python
value (an eager tensor included: it has a truth value) runs Python's own control flow, unchanged;
a graph tensor builds the existing tf.cond / tf.while_loop over the statement's functions (no
other mechanism). Messages are TensorFlow AutoGraph's.
"""

import threading

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import eager as _eager
from flowstone.framework import ops as _ops
from flowstone.framework.func_graph import FuncGraph
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import array_ops
from flowstone.ops import basic_ops
from flowstone.ops import control_flow_ops
from flowstone.ops import dataset_ops
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


def _as_tensor(value):
    return value.value() if isinstance(value, _variables.Variable) else value


def _check_condition(cond, statement):
    """`cond` as a scalar bool tensor (one element of any rank is reshaped, as in TF)."""
    cond = _ops.convert_to_tensor(_as_tensor(cond))
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
        return math_ops.logical_not(_as_tensor(value))
    return not value


def and_(a, b):
    """`a() and b()`, with b evaluated only when a is true (a tf.cond for a graph tensor)."""
    first = a()
    if is_graph_tensor(first):
        first = _as_tensor(first)
        return control_flow_ops.cond(first, lambda: _ops.convert_to_tensor(b()), lambda: first)
    return first and b()


def or_(a, b):
    """`a() or b()`, with b evaluated only when a is false."""
    first = a()
    if is_graph_tensor(first):
        first = _as_tensor(first)
        return control_flow_ops.cond(first, lambda: first, lambda: _ops.convert_to_tensor(b()))
    return first or b()


def eq(a, b):
    """`a == b`: elementwise tf.equal when either side is a graph tensor (TF 2's operator)."""
    if is_graph_tensor(a) or is_graph_tensor(b):
        return math_ops.equal(_as_tensor(a), _as_tensor(b))
    return a == b


def not_eq(a, b):
    if is_graph_tensor(a) or is_graph_tensor(b):
        return math_ops.not_equal(_as_tensor(a), _as_tensor(b))
    return a != b


def if_exp(cond, if_true, if_false):
    """`if_true() if cond else if_false()`."""
    if is_graph_tensor(cond):
        return control_flow_ops.cond(_check_condition(cond, "if expression"), if_true, if_false)
    return if_true() if cond else if_false()


# --- if -----------------------------------------------------------------------------------


class _Staging(threading.local):
    depth = 0  # > 0 while a loop body is traced only to learn its variables' types


_staging = _Staging()


def if_stmt(cond, body, orelse, state, names):
    """An `if` whose branches are functions of the statement's state; returns the new state."""
    if is_graph_tensor(cond):
        cond = _check_condition(cond, "if statement")
        if _staging.depth:
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
            values = [nest.map_structure(lambda v: _ops.convert_to_tensor(_as_tensor(v)), v)
                      for v in values] or [_ops.convert_to_tensor(0)]
            values = _after_effects(start, values)
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


def _after_effects(start, values):
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


# --- loops --------------------------------------------------------------------------------


def while_stmt(test, body, state, names, opts):
    """A `while` over the statement's state: a Python loop while the test gives Python values;
    from the first test that gives a graph tensor on, a tf.while_loop."""
    state = tuple(state)
    while True:
        result = test(*state)
        if is_graph_tensor(result):
            return _tf_loop(test, body, state, names, opts)
        if not result:
            return state
        state = tuple(body(*state))


def for_stmt(iterable, extra_test, body, state, names, opts):
    """A `for` over the statement's state. A graph tensor (tf.range's counter or the first axis
    of any tensor) and a dataset in a graph build a loop op; anything else is Python's loop."""
    state = tuple(state)
    if is_graph_tensor(iterable):
        return _tf_tensor_for(_as_tensor(iterable), extra_test, body, state, names, opts)
    if isinstance(iterable, dataset_ops.DatasetV1) and not _ops.executing_eagerly():
        return _tf_dataset_for(iterable, extra_test, body, state, names)
    for item in iterable:
        if extra_test is not None:
            proceed = extra_test(*state)
            if is_graph_tensor(proceed):
                # A break on a tensor in a Python loop: each later iteration runs under a
                # tf.cond of the test (the loop itself stays unrolled).
                state = tuple(if_stmt(proceed, lambda *s, item=item: body(item, *s),
                                      lambda *s: s, state, names))
                continue
            if not proceed:
                break
        state = tuple(body(item, *state))
    return state


def _range_parts(tensor):
    op = tensor.op
    if op.type == "Range":
        return op.inputs[0], op.inputs[1], op.inputs[2]
    return None


def _tf_tensor_for(iterable, extra_test, body, state, names, opts):
    parts = _range_parts(iterable)
    if parts is not None:
        start, limit, delta = parts

        def in_range(i):
            return math_ops.logical_or(
                math_ops.logical_and(delta > 0, i < limit),
                math_ops.logical_and(delta < 0, i > limit))
        item_of = lambda i: i  # noqa: E731
        advance = lambda i: i + delta  # noqa: E731
        first = start
    else:
        if iterable.shape.rank == 0:
            raise TypeError(f"Cannot iterate over a scalar tensor ({iterable.name}).")
        count = array_ops.shape(iterable, out_type=_dtypes.int32)[0]
        in_range = lambda i: i < count  # noqa: E731
        item_of = lambda i: array_ops.gather(iterable, i)  # noqa: E731
        advance = lambda i: i + 1  # noqa: E731
        first = _ops.convert_to_tensor(0)

    def test(i, *s):
        going = in_range(i)
        if extra_test is None:
            return going
        return and_(lambda: going, lambda: extra_test(*s))

    def step(i, *s):
        return (advance(i),) + tuple(body(item_of(i), *s))

    results = _tf_loop(test, step, (first,) + state, ("<iteration index>",) + tuple(names),
                       opts)
    return tuple(results[1:])


def _tf_dataset_for(dataset, extra_test, body, state, names):
    for name, value in zip(names, state):
        if isinstance(value, (Undefined, UndefinedReturnValue)):
            raise ValueError(f"'{name}' must be defined before the loop")

    def fold(carried, element):
        # The reduce state has one element more: a loop with no state still needs one.
        carried = tuple(carried)[1:]
        if extra_test is not None:
            proceed = extra_test(*carried)
            return (0,) + tuple(if_stmt(proceed, lambda *s: body(element, *s), lambda *s: s,
                                        carried, names))
        return (0,) + tuple(body(element, *carried))

    return tuple(dataset.reduce((0,) + tuple(state), fold))[1:]


def _placeholder_like(graph, value):
    """A Placeholder of `graph` standing for `value` (Python numbers as the tensors they
    become); lists are copied, other objects kept."""
    if isinstance(value, list):
        return list(value)

    def one(v):
        if isinstance(v, (_ops.Tensor, _variables.Variable, bool, int, float)):
            t = _ops.convert_to_tensor(_as_tensor(v))
            return graph._placeholder(t.dtype, t.shape, "staged")
        return v
    return nest.map_structure(one, value)


def _zero_like(like):
    """A value of the kind `like` is, to start a loop variable the loop defines: (zeros,
    shape invariant or None), or None when there is none."""
    if isinstance(like, (bool, int, float)):
        return type(like)(0), None
    if isinstance(like, (_ops.Tensor, _variables.Variable)):
        shape = like.shape
        if shape.rank is None:
            return array_ops.zeros([], like.dtype), TensorShape(None)
        dims = shape.as_list()
        zeros = array_ops.zeros([d or 0 for d in dims], like.dtype)
        return zeros, (shape if None in dims else None)
    return None


def _define_undefined(stage, state, names):
    """Start values for loop variables the loop itself defines (and lists it appends to, which
    become TensorArrays): the loop body is traced once into a scratch graph to see what they
    become, as TensorFlow's AutoGraph does. Returns the state and shape invariants by name."""
    pending = [isinstance(v, (Undefined, UndefinedReturnValue)) or isinstance(v, list)
               for v in state]
    if not any(pending):
        return state, {}
    scratch = FuncGraph("autograph_staging", _ops.get_default_graph())
    staged, failure = None, None
    _staging.depth += 1
    try:
        with scratch.as_default():
            staged = stage(tuple(v if isinstance(v, (Undefined, UndefinedReturnValue))
                                 else _placeholder_like(scratch, v) for v in state))
    except (UnboundLocalError, TypeError, ValueError, KeyError) as e:
        failure = (f"Note: AutoGraph tried to define it automatically, but ran into a "
                   f"{type(e).__name__}: {e}")
    finally:
        _staging.depth -= 1
    new_state, invariants = [], {}
    for i, (name, value) in enumerate(zip(names, state)):
        like = staged[i] if staged is not None else value
        if isinstance(value, list):
            new_state.append(_list_as_tensor_array(name, value, like))
            continue
        if not pending[i]:
            new_state.append(value)
            continue
        if isinstance(value, UndefinedReturnValue) and staged is not None:
            if isinstance(like, (Undefined, UndefinedReturnValue)):
                raise NotImplementedError(
                    "a return statement cannot be placed inside this TensorFlow loop; this may "
                    "happen if a return statement depends on a static Python condition such as "
                    "a hyperparameter")
        zero = _zero_like(like)
        if zero is None:
            message = f"'{name}' must be defined before the loop"
            raise ValueError(message + (f"\n{failure}" if failure else ""))
        new_state.append(zero[0])
        if zero[1] is not None:
            invariants[name] = zero[1]
    return tuple(new_state), invariants


def _list_as_tensor_array(name, value, staged):
    """A Python list appended to in a tensor loop, as a TensorArray of its elements' kind."""
    sample = value[0] if value else (staged[0] if isinstance(staged, list) and staged else None)
    if sample is None:
        raise ValueError(f"'{name}' is a Python list that this tensor loop does not append "
                         "to; a tensor loop cannot carry a Python list. Use a tf.TensorArray.")
    sample = _ops.convert_to_tensor(_as_tensor(sample))
    array = tensor_array_ops.TensorArray(sample.dtype, size=0, dynamic_size=True,
                                         element_shape=sample.shape)
    for i, element in enumerate(value):
        array = array.write(i, element)
    return array


def list_append(target, value):
    """`target.append(value)`: Python's for a list; a write at the end for a TensorArray."""
    if isinstance(target, tensor_array_ops.TensorArray):
        return target.write(target.size(), value)
    target.append(value)
    return target


def _is_subshape(inner, outer):
    if outer.rank is None:
        return True
    if inner.rank != outer.rank:
        return False
    return all(o is None or i == o for i, o in zip(inner.as_list(), outer.as_list()))


def _check_loop_var(name, entry, exit_, invariant):
    try:
        nest.assert_same_structure(entry, exit_, check_types=False)
    except (ValueError, TypeError) as e:
        raise TypeError(f"'{name}' does not have the same nested structure after one "
                        f"iteration.\n\n{e}") from None
    for before, after in zip(nest.flatten(entry), nest.flatten(exit_)):
        if after is None:
            raise ValueError(f"'{name}' is None at the end of the iteration.")
        if isinstance(before, tensor_array_ops.TensorArray):
            continue
        after = _ops.convert_to_tensor(_as_tensor(after))
        if before.dtype != after.dtype:
            raise TypeError(f"'{name}' has dtype {before.dtype.name} before the loop, but dtype "
                            f"{after.dtype.name} after one iteration")
        if invariant is None and not _is_subshape(after.shape, before.shape):
            raise ValueError(f"'{name}' has shape {before.shape} before the loop, but shape "
                             f"{after.shape} after one iteration. Use "
                             "tf.autograph.experimental.set_loop_options to set shape "
                             "invariants.")
        if invariant is not None and not _is_subshape(after.shape, invariant):
            raise ValueError(f"'{name}' has shape {after.shape} after one iteration, which does "
                             f"not conform with the shape invariant {invariant}.")


def _tf_loop(test, body, state, names, opts):
    """tf.while_loop over `test` and `body` (functions of the state), with AutoGraph's checks."""
    if not state:
        # A loop with only side effects still carries one variable, for them to wait on.
        _tf_loop(lambda _: test(), lambda unused: (unused,) + tuple(body()), (0,),
                 ("<no variables>",), opts)
        return ()
    state, invariants = _define_undefined(lambda args: body(*args), tuple(state), names)
    for name, value in zip(names, state):
        if value is None:
            raise ValueError(f"'{name}' is not allowed to be None before the loop")
    for name, shape in (opts.get("shape_invariants") or []):
        invariants[name] = TensorShape(shape) if not isinstance(shape, TensorShape) else shape
    state = tuple(_as_tensor(v) for v in state)
    entry_invariants = [invariants.get(n) for n in names]

    def checked_test(*args):
        return _check_condition(test(*args), "while loop")

    def checked_body(*args):
        start = len(_ops.get_default_graph().get_operations())
        out = tuple(body(*args))
        for name, entry, exit_, inv in zip(names, args, out, entry_invariants):
            _check_loop_var(name, entry, exit_, inv)
        return _after_effects(start, out)

    shape_invariants = None
    if any(i is not None for i in entry_invariants):
        shape_invariants = tuple(
            inv if inv is not None else
            nest.map_structure(lambda v: _ops.convert_to_tensor(v).shape
                               if not isinstance(v, tensor_array_ops.TensorArray)
                               else TensorShape(None), value)
            for inv, value in zip(entry_invariants, state))
    results = control_flow_ops.while_loop(
        checked_test, checked_body, state, shape_invariants=shape_invariants,
        maximum_iterations=opts.get("maximum_iterations"),
        parallel_iterations=opts.get("parallel_iterations", 10), return_same_structure=True)
    return tuple(results)
