"""tf.cond, tf.case and tf.while_loop over graph functions (If / While ops), as TF 2's control
flow v2 builds them: each branch, condition and body is traced into a function of the graph's
library, and tensors it uses from outside become extra inputs of the call."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.func_graph import FuncGraph, function_base_name
from flowstone.framework.tensor_shape import as_shape
from flowstone.ops import math_ops
from flowstone.ops import tensor_array_ops
from flowstone.util import nest
from flowstone.util.tf_export import tf_export


def _dtype_repr(dtype):
    return f"<dtype: '{dtype.name}'>"


def _as_caller_tensor(graph, value, name=None):
    """`value` as a tensor usable by an op of `graph` (captured when `graph` is a function body
    and the tensor comes from further out)."""
    with graph.as_default():
        t = _ops.convert_to_tensor(value, name=name)
    return t if t.graph is graph else graph._capture(t, "call")


def _trace(graph, kind, fn, arg_tensors, arg_structure=None, shapes=None):
    """Traces `fn` into a new function body under `graph`; its arguments are Placeholders like
    `arg_tensors` (with `shapes` when given), passed to `fn` packed as `arg_structure`. Returns
    the body, its argument Placeholders and what `fn` returned, as tensors of the body."""
    body = FuncGraph(function_base_name(graph, kind), graph)
    shapes = shapes or [t.shape for t in arg_tensors]
    args = [body.add_input(t.dtype, s) for t, s in zip(arg_tensors, shapes)]
    packed = args if arg_structure is None else nest.pack_sequence_as(arg_structure, args)
    with body.as_default():
        result = fn(*packed)
    return body, args, result


def _body_tensors(body, flat_values, op_return_value=None):
    """Each returned value as a tensor of `body` (a Python value becomes a constant there; an
    outer tensor is captured). With `op_return_value` (a tensor of the caller), a returned
    Operation becomes that value, read after the Operation ran, as TensorFlow's cond does."""
    out = []
    with body.as_default():
        for value in flat_values:
            if isinstance(value, _ops.Operation) and op_return_value is not None:
                value = _run_then_return(body, value, op_return_value)
            elif isinstance(value, _ops.Operation):
                raise TypeError(f"A function traced for control flow returned the Operation "
                                f"'{value.name}'; return tensors (wrap side effects in "
                                "tf.control_dependencies and return a tensor).")
            t = _ops.convert_to_tensor(value)
            out.append(t if t.graph is body else body._capture(t, "return"))
    return out


def _run_then_return(body, operation, outer_value):
    """An identity of `outer_value` (captured into `body`) that runs after `operation` (an
    Operation of the caller's graph runs before the whole cond, as in TensorFlow 1)."""
    inner = body._capture(outer_value, "return") if outer_value.graph is not body else outer_value
    with body.control_dependencies([operation]):
        return _ops.apply_op("Identity", [inner], name="Identity").outputs[0]


def _share_captures(bodies):
    """Makes every body capture the union of the bodies' captured tensors, in one order, so they
    all take the same inputs. Returns those tensors of the caller's graph, in that order."""
    outer = []
    seen = set()
    for body in bodies:
        for value, _ in body.captures:
            if id(value) not in seen:
                seen.add(id(value))
                outer.append(value)
    for body in bodies:
        body.capture_all(outer)
    return outer


def _inputs_of(body, explicit_args, outer_captures):
    by_outer = {id(value): placeholder for value, placeholder in body.captures}
    return explicit_args + [by_outer[id(t)] for t in outer_captures]


def _control_captures(bodies):
    ops = []
    for body in bodies:
        ops.extend(op for op in body.control_captures if op not in ops)
    return ops


def _branch_mismatch(error_type, true_out, false_out, detail):
    return error_type("true_fn and false_fn arguments to tf.cond must have the same number, "
                      "type, and overall structure of return values.\n\n"
                      f"true_fn output: {true_out}\nfalse_fn output: {false_out}\n\n"
                      f"Error details:\n{detail}")


@tf_export("cond")
def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """Returns `true_fn()` if `pred` is true, else `false_fn()`. Only the branch taken runs.

    Both branches must return the same structure of tensors with the same dtypes. `strict` is
    accepted for TF1 compatibility: like TF 2's compat.v1.cond, the structure is always kept."""
    del strict  # control flow v2 keeps the returned structure in both modes
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool", pred)
    if _ops.executing_eagerly():
        return true_fn() if bool(pred) else false_fn()  # only the branch taken runs, at once
    with _ops.name_scope(name, "cond") as scope:
        graph = _ops.get_default_graph()
        pred = _as_caller_tensor(graph, pred)
        then_body, _, true_out = _trace(graph, "true", true_fn, [])
        else_body, _, false_out = _trace(graph, "false", false_fn, [])
        try:
            nest.assert_same_structure(true_out, false_out, check_types=False)
        except (ValueError, TypeError) as e:
            raise _branch_mismatch(ValueError, true_out, false_out, e) from None
        # A branch may return an Operation (a train op, tf.no_op()): the cond then gives the
        # predicate, as TensorFlow's does.
        then_flat = _body_tensors(then_body, nest.flatten(true_out), op_return_value=pred)
        else_flat = _body_tensors(else_body, nest.flatten(false_out), op_return_value=pred)
        for t, f in zip(then_flat, else_flat):
            if t.dtype != f.dtype:
                raise _branch_mismatch(TypeError, true_out, false_out,
                                       f"{t} and {f} have different types")
        captured = _share_captures([then_body, else_body])
        then_body.add_to_library(_inputs_of(then_body, [], captured), then_flat)
        else_body.add_to_library(_inputs_of(else_body, [], captured), else_flat)
        op_type = "If" if then_body.is_stateful() or else_body.is_stateful() else "StatelessIf"
        with graph.control_dependencies(_control_captures([then_body, else_body])):
            # Without output_shapes, the op's shape function merges the branches' shapes.
            op = _ops.apply_op(op_type, [pred, captured], {
                "Tout": [t.dtype for t in then_flat],
                "then_branch": then_body.name,
                "else_branch": else_body.name,
            }, name=scope.rstrip("/"), exact_name=True)
        with graph.as_default():
            outputs = [_ops.apply_op("Identity", [o], name="Identity").outputs[0]
                       for o in op.outputs]
        return nest.pack_sequence_as(true_out, outputs)


@tf_export("case")
def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The result of the first callable whose predicate is true, else of `default` (or, without
    one, of the last callable). Built from nested conds, so only the chosen callable runs."""
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError("pred_fn_pairs must be a list or a dict")
    if not pred_fn_pairs and default is None:
        raise ValueError("pred_fn_pairs must be non-empty when no default is given")
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in pred_fn_pairs must be a 2-tuple, got {pair!r}")
        if not callable(pair[1]):
            raise TypeError("fn for pred %s must be callable." % pair[0].name)
    del exclusive  # see COMPAT.md: no runtime check that at most one predicate holds
    pairs = list(pred_fn_pairs)
    if default is None:
        default = pairs.pop()[1]
    if not callable(default):
        raise TypeError("default must be callable.")
    with _ops.name_scope(name, "case"):
        def chain(index):
            if index == len(pairs):
                return default
            pred, fn = pairs[index]
            return lambda: cond(pred, fn, chain(index + 1), strict=strict)
        return chain(0)()


def _loop_var_error(index_name, before, after):
    return ValueError(
        f"Input tensor `{index_name}` enters the loop with shape {before}, but has shape {after} "
        "after one iteration. To allow the shape to vary across iterations, use the "
        "`shape_invariants` argument of tf.while_loop to specify a less-specific shape.")


def _eager_while_loop(cond, body, loop_vars, maximum_iterations, return_same_structure):
    """TensorFlow's eager while_loop: a Python loop over the values. A single loop variable
    comes back bare unless return_same_structure is set."""
    single = len(loop_vars) == 1 and not return_same_structure
    packed = False
    iterations = 0
    while ((maximum_iterations is None or iterations < int(maximum_iterations)) and
           bool(cond(*loop_vars))):
        loop_vars = body(*loop_vars)
        iterations += 1
        if single and not isinstance(loop_vars, (list, tuple)):
            packed = True
            loop_vars = (loop_vars,)
    return loop_vars[0] if packed else loop_vars


@tf_export("while_loop")
def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,  # noqa: C901
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """Repeats `body` while `cond` is true, as TF's while_loop (control flow v2): a While op over
    two traced functions, with a loop counter and `maximum_iterations` as its first two loop
    variables. `loop_vars` may nest; `shape_invariants` (same structure) relax the shapes a loop
    variable may take; `back_prop=False` stops gradients at the loop's outputs. `swap_memory` is
    accepted; iterations run one after another whatever `parallel_iterations` says."""
    del swap_memory
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    if _ops.executing_eagerly():
        return _eager_while_loop(cond, body, loop_vars, maximum_iterations,
                                 return_same_structure)
    # TensorArrays travel through the loop as their flows.
    ta_template = loop_vars
    loop_vars = tensor_array_ops.to_flows(loop_vars)
    orig_loop_vars = loop_vars
    with _ops.name_scope(name, "while") as scope:
        graph = _ops.get_default_graph()
        flat_vars = [_as_caller_tensor(graph, v) for v in nest.flatten(loop_vars)]
        if shape_invariants is None:
            invariants = [t.shape for t in flat_vars]
        else:
            nest.assert_same_structure(loop_vars, shape_invariants, check_types=False)
            invariants = [as_shape(s) for s in nest.flatten(shape_invariants)]
            for t, s in zip(flat_vars, invariants):
                if not s.is_compatible_with(t.shape):
                    raise ValueError(f"The shape invariant specified for {t.name} is not "
                                     f"compatible with the initial shape of the loop variable. "
                                     f"It enters the loop with shape {t.shape}, but the "
                                     f"specified shape invariant is {s}.")
        with graph.as_default():
            counter = _ops.constant(0, name="loop_counter")
            if isinstance(maximum_iterations, _ops.Tensor):
                # A computed bound (tf.map_fn over a fed length).
                limit = _as_caller_tensor(graph, maximum_iterations)
            else:
                limit = _ops.constant(-1 if maximum_iterations is None else maximum_iterations,
                                      dtype=_dtypes.int32, name="maximum_iterations")
        all_vars = [counter, limit] + flat_vars
        all_shapes = [as_shape([]), as_shape([])] + invariants
        structure = [0, 0] + list(ta_template if isinstance(ta_template, (list, tuple))
                                  else [ta_template])

        def cond_fn(i, n, *user_vars):
            pred = cond(*tensor_array_ops.from_flows(structure[2:], list(user_vars)))
            if maximum_iterations is None:
                return pred
            return math_ops.logical_and(math_ops.less(i, n), pred)

        def body_fn(i, n, *user_vars):
            outputs = body(*tensor_array_ops.from_flows(structure[2:], list(user_vars)))
            if not nest.is_nested(outputs):
                outputs = [outputs]
            outputs = tensor_array_ops.to_flows(outputs)
            nest.assert_same_structure(outputs, structure[2:], check_types=False)
            return [math_ops.add(i, 1), n] + nest.flatten(outputs)

        cond_body, cond_args, pred = _trace(graph, "cond", cond_fn, all_vars, structure,
                                            all_shapes)
        body_body, body_args, new_vars = _trace(graph, "body", body_fn, all_vars,
                                                structure, all_shapes)
        (pred_t,) = _body_tensors(cond_body, [pred])
        new_flat = _body_tensors(body_body, new_vars)
        for before, after, shape in zip(all_vars[2:], new_flat[2:], invariants):
            if before.dtype != after.dtype:
                raise TypeError(
                    f"Loop var {before.name} enters the loop with type "
                    f"{_dtype_repr(before.dtype)} but has type {_dtype_repr(after.dtype)} after "
                    f"1 iteration. {before.name} type should remain constant.")
            if not shape.is_compatible_with(after.shape):
                raise _loop_var_error(before.name, shape, after.shape)
        captured = _share_captures([cond_body, body_body])
        body_inputs = _inputs_of(body_body, body_args, captured)
        cond_body.add_to_library(_inputs_of(cond_body, cond_args, captured), [pred_t])
        # Captured tensors are loop invariants: the body passes them through.
        body_body.add_to_library(body_inputs, new_flat + body_inputs[len(body_args):])
        inputs = all_vars + captured
        shapes = all_shapes + [t.shape for t in captured]
        stateful = cond_body.is_stateful() or body_body.is_stateful()
        with graph.control_dependencies(_control_captures([cond_body, body_body])):
            op = _ops.apply_op("While" if stateful else "StatelessWhile", [inputs], {
                "cond": cond_body.name,
                "body": body_body.name,
                "output_shapes": [s.as_proto_dims() for s in shapes],
                "parallel_iterations": parallel_iterations,
            }, name=scope.rstrip("/"), exact_name=True)
        # back_prop=False: no gradient flows back through the loop, as in TF.
        output_op = "Identity" if back_prop else "StopGradient"
        with graph.as_default():
            outputs = [_ops.apply_op(output_op, [o], name=output_op).outputs[0]
                       for o in op.outputs[:len(all_vars)]]
        results = tensor_array_ops.from_flows(
            ta_template, nest.pack_sequence_as(orig_loop_vars, outputs[2:]))
        if (not return_same_structure and isinstance(orig_loop_vars, (list, tuple))
                and len(orig_loop_vars) == 1):
            return results[0]
        return results
