"""tf.map_fn, tf.scan, tf.foldl and tf.foldr: a function applied along dimension 0 of (nested)
tensors, built as TensorFlow builds them: a tf.while_loop reading the elements from
TensorArrays and writing the results to others, so gradients flow through the loop and the
TensorArrays."""

from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import array_ops as _array_ops
from flowstone.ops import control_flow_ops as _control_flow_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.ops.tensor_array_ops import TensorArray
from flowstone.util import nest
from flowstone.util.tf_export import tf_export


def _leading_size(elems_flat):
    """The number of elements: static when known, else a tensor."""
    static = elems_flat[0].shape[0] if elems_flat[0].shape.rank else None
    for elem in elems_flat:
        if elem.shape.rank == 0:
            raise ValueError(f"Elements in elems must be 1+ dimensional Tensors, not scalars "
                             f"({elem.name})")
    return static if static is not None else _array_ops.shape(elems_flat[0])[0], static


def _unstacked(elems_flat):
    n, _ = _leading_size(elems_flat)
    return [TensorArray(dtype=e.dtype, size=n, dynamic_size=False, infer_shape=True).unstack(e)
            for e in elems_flat]


def _loop(cond, body, loop_vars, parallel_iterations, back_prop, swap_memory, n):
    return _control_flow_ops.while_loop(
        cond, body, loop_vars, parallel_iterations=parallel_iterations, back_prop=back_prop,
        swap_memory=swap_memory, maximum_iterations=n)


def _set_leading(results, static_n):
    for r in results:
        if r.shape.rank is not None:
            r.set_shape(TensorShape([static_n]).concatenate(r.shape[1:]))


@tf_export("map_fn")
def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None, fn_output_signature=None):
    """Stacks `fn(x)` for each x unpacked from `elems` along dimension 0. `elems` may be a nested
    structure of tensors (fn then receives that structure); `dtype` gives the structure and dtypes
    of fn's output when they differ from elems'."""
    if fn_output_signature is not None:
        dtype = fn_output_signature
    if not callable(fn):
        raise TypeError("fn must be callable.")
    parallel_iterations = parallel_iterations or 10
    elems_flat = nest.flatten(elems)
    if not elems_flat:
        raise ValueError("elems must be a Tensor or (possibly nested) sequence of Tensors. Got "
                         f"{elems}")
    with _ops.name_scope(name, "map", elems_flat):
        elems_flat = [_ops.convert_to_tensor(e, name="elem") for e in elems_flat]
        out_structure = elems if dtype is None else dtype
        dtype_flat = [e.dtype for e in elems_flat] if dtype is None else nest.flatten(dtype)
        n, static_n = _leading_size(elems_flat)
        elems_ta = _unstacked(elems_flat)
        accs = [TensorArray(dtype=dt, size=n, dynamic_size=False, infer_shape=infer_shape)
                for dt in dtype_flat]

        def compute(i, *flows):
            values = nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            outputs = fn(values)
            nest.assert_same_structure(out_structure, outputs)
            written = [acc._with_flow(flow).write(i, value) for acc, flow, value
                       in zip(accs, flows, nest.flatten(outputs))]
            return [_math_ops.add(i, 1)] + [ta.flow for ta in written]

        loop_vars = [_ops.convert_to_tensor(0)] + [acc.flow for acc in accs]
        final = _loop(lambda i, *_: _math_ops.less(i, n), compute, loop_vars,
                      parallel_iterations, back_prop, swap_memory, n)
        results = [acc._with_flow(flow).stack() for acc, flow in zip(accs, final[1:])]
        _set_leading(results, static_n)
        return nest.pack_sequence_as(out_structure, results)


@tf_export("scan")
def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """The successive values of `a = fn(a, x)` over x in `elems` along dimension 0 (from the end
    when `reverse`), starting from `initializer` (else from the first element), stacked."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    elems_flat = nest.flatten(elems)
    with _ops.name_scope(name, "scan", elems_flat):
        elems_flat = [_ops.convert_to_tensor(e, name="elem") for e in elems_flat]
        n, static_n = _leading_size(elems_flat)
        elems_ta = _unstacked(elems_flat)
        if initializer is None:
            first = n - 1 if reverse else 0
            a_flat = [ta.read(first) for ta in elems_ta]
            a_structure = elems
            start = 1
        else:
            a_flat = [_ops.convert_to_tensor(a) for a in nest.flatten(initializer)]
            a_structure = initializer
            start = 0
        accs = [TensorArray(dtype=a.dtype, size=n, dynamic_size=False, infer_shape=infer_shape)
                for a in a_flat]
        if initializer is None:
            accs = [acc.write(n - 1 if reverse else 0, a) for acc, a in zip(accs, a_flat)]
        num_a = len(a_flat)

        def compute(i, *state):
            a = nest.pack_sequence_as(a_structure, list(state[:num_a]))
            index = _math_ops.subtract(n - 1, i) if reverse else i
            x = nest.pack_sequence_as(elems, [ta.read(index) for ta in elems_ta])
            new_a = fn(a, x)
            nest.assert_same_structure(a_structure, new_a)
            new_flat = [_ops.convert_to_tensor(v) for v in nest.flatten(new_a)]
            written = [acc._with_flow(flow).write(index, value) for acc, flow, value
                       in zip(accs, state[num_a:], new_flat)]
            return [_math_ops.add(i, 1)] + new_flat + [ta.flow for ta in written]

        loop_vars = [_ops.convert_to_tensor(start)] + a_flat + [acc.flow for acc in accs]
        final = _loop(lambda i, *_: _math_ops.less(i, n), compute, loop_vars,
                      parallel_iterations, back_prop, swap_memory, n)
        results = [acc._with_flow(flow).stack() for acc, flow in zip(accs, final[1 + num_a:])]
        _set_leading(results, static_n)
        return nest.pack_sequence_as(a_structure, results)


def _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, reverse,
          scope_name):
    if not callable(fn):
        raise TypeError("fn must be callable.")
    elems_flat = nest.flatten(elems)
    with _ops.name_scope(name, scope_name, elems_flat):
        elems_flat = [_ops.convert_to_tensor(e, name="elem") for e in elems_flat]
        n, _ = _leading_size(elems_flat)
        elems_ta = _unstacked(elems_flat)
        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            a_structure = elems
            start = 1
        else:
            a_flat = [_ops.convert_to_tensor(a) for a in nest.flatten(initializer)]
            a_structure = initializer
            start = 0

        def compute(i, *a_values):
            a = nest.pack_sequence_as(a_structure, list(a_values))
            index = _math_ops.subtract(n - 1, i) if reverse else i
            x = nest.pack_sequence_as(elems, [ta.read(index) for ta in elems_ta])
            new_a = fn(a, x)
            nest.assert_same_structure(a_structure, new_a)
            return [_math_ops.add(i, 1)] + [_ops.convert_to_tensor(v)
                                            for v in nest.flatten(new_a)]

        loop_vars = [_ops.convert_to_tensor(start)] + a_flat
        final = _loop(lambda i, *_: _math_ops.less(i, n), compute, loop_vars,
                      parallel_iterations, back_prop, swap_memory, n)
        return nest.pack_sequence_as(a_structure, list(final[1:]))


@tf_export("foldl")
def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """`a = fn(a, x)` over x in `elems` along dimension 0 from the first; the final `a`."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name,
                 reverse=False, scope_name="foldl")


@tf_export("foldr")
def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """`a = fn(a, x)` over x in `elems` along dimension 0 from the last; the final `a`."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name,
                 reverse=True, scope_name="foldr")
