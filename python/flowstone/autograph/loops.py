"""The loops of converted code: `while` and `for` over a statement's state, as Python loops
for Python values and as tf.while_loop (or a dataset's reduce) for graph tensors, with the
start values of variables the loop itself defines found by tracing its body once."""

from flowstone import dtypes as _dtypes
from flowstone.autograph.operators import (Undefined, UndefinedReturnValue, after_effects,
                                           and_, as_tensor, check_condition, if_stmt,
                                           is_graph_tensor, staging)
from flowstone.framework import ops as _ops
from flowstone.framework.func_graph import FuncGraph
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import array_ops
from flowstone.ops import control_flow_ops
from flowstone.ops import dataset_ops
from flowstone.ops import math_ops
from flowstone.ops import tensor_array_ops
from flowstone.ops import variables as _variables
from flowstone.util import nest


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
        return _tf_tensor_for(as_tensor(iterable), extra_test, body, state, names, opts)
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
            t = _ops.convert_to_tensor(as_tensor(v))
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
    staging.depth += 1
    try:
        with scratch.as_default():
            staged = stage(tuple(v if isinstance(v, (Undefined, UndefinedReturnValue))
                                 else _placeholder_like(scratch, v) for v in state))
    except (UnboundLocalError, TypeError, ValueError, KeyError) as e:
        failure = (f"Note: AutoGraph tried to define it automatically, but ran into a "
                   f"{type(e).__name__}: {e}")
    finally:
        staging.depth -= 1
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
    sample = _ops.convert_to_tensor(as_tensor(sample))
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
        after = _ops.convert_to_tensor(as_tensor(after))
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
    state = tuple(as_tensor(v) for v in state)
    entry_invariants = [invariants.get(n) for n in names]

    def checked_test(*args):
        return check_condition(test(*args), "while loop")

    def checked_body(*args):
        start = len(_ops.get_default_graph().get_operations())
        out = tuple(body(*args))
        for name, entry, exit_, inv in zip(names, args, out, entry_invariants):
            _check_loop_var(name, entry, exit_, inv)
        return after_effects(start, out)

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
