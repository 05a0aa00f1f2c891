"""tf.gradients and tf.stop_gradient: symbolic differentiation, done by the C++ graph."""

from flowstone import _C
from flowstone import errors as _errors
from flowstone.framework import func_graph as _func_graph
from flowstone.framework import gradient_registry as _gradient_registry
from flowstone.framework import ops as _ops

__all__ = ["gradients", "stop_gradient"]


def _as_endpoint(value, what):
    handle = getattr(value, "handle", None)
    if handle is not None and not isinstance(value, _ops.Tensor):
        return handle  # a Variable: gradients accumulate at its handle, over every read
    try:
        return _ops.convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"tf.gradients: {what} {value!r} is not a Tensor or Variable ({e})") from None


def _as_seen_in(x, graph):
    """`x` as `graph` sees it: a tensor of an outer graph that a function body (a tf.cond branch)
    reads is the body's capture Placeholder; None when the body never reads it (no gradient)."""
    bodies = []
    g = graph
    while g is not None and g is not x.graph:
        bodies.append(g)
        g = getattr(g, "outer_graph", None)
    if g is None:
        return x  # not an enclosing graph's: the C++ builder names the problem
    for body in reversed(bodies):
        found = body._captures.get(id(x))
        if found is None:
            return None
        x = found[1]
    return x


def _as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None,
              unconnected_gradients="none"):
    """Symbolic derivatives of sum(ys) with respect to each of xs (None where unconnected)."""
    ys = [_as_endpoint(y, "y") for y in _as_list(ys)]
    xs_list = _as_list(xs)
    xs_t = [_as_endpoint(x, "x") for x in xs_list]
    grad_ys = _as_list(grad_ys)
    if grad_ys and len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    graph = ys[0].graph if ys else _ops.get_default_graph()
    seeds = [None if g is None else _ops.convert_to_tensor(g, dtype=y.dtype)._as_node_output()
             for g, y in zip(grad_ys, ys)] if grad_ys else [None] * len(ys)
    stops = [_ops.convert_to_tensor(s)._as_node_output() for s in _as_list(stop_gradients)]
    seen = [_as_seen_in(x, graph) for x in xs_t]
    for i, original in enumerate(xs_list):
        # A body that reads a graph variable through its cached value (`v + 1`) captured that
        # value, not the handle: the gradient is with respect to it.
        cached = getattr(original, "_value", None)
        if seen[i] is None and isinstance(cached, _ops.Tensor) and cached.graph is not graph:
            seen[i] = _as_seen_in(cached, graph)
    with graph.as_default(), graph.name_scope(name) as scope:
        try:
            connected = _C.add_gradients(graph._c, [y._as_node_output() for y in ys],
                                         [x._as_node_output() for x in seen if x is not None],
                                         seeds, stops, scope.rstrip("/"), _ops._creation_site(),
                                         _python_gradient_caller(graph, scope))
        except _C.StatusError as e:
            raise _errors.from_status_error(e, as_op_error=False) from None
    connected = iter(connected)
    results = [None if x is None else next(connected) for x in seen]
    graph._sync_ops()
    out = []
    for x, original, r in zip(xs_t, xs_list, results):
        if r is None:
            if unconnected_gradients == "zero":
                from flowstone.ops import array_ops
                like = original.value() if hasattr(original, "value") and callable(
                    original.value) else x
                out.append(array_ops.zeros_like(like))
            else:
                out.append(None)
        else:
            node, index = r
            out.append(graph._ops[node.id].outputs[index])
    return out


def _python_gradient_caller(graph, scope):
    """The callback through which the C++ gradient builder runs a tf.RegisterGradient function:
    (name, node, output grads as (node, index) or None) -> None when `name` is not registered,
    else one (node, index) or None per input of the node."""

    def call(gradient_name, node, output_grads):
        found, fn = _gradient_registry.lookup(gradient_name)
        if not found:
            return None
        # The node is in `graph`, or in the body of a loop, cond or call being differentiated.
        in_body = node.graph is not graph._c
        owner = _func_graph.body_graph_of(node.graph) if in_body else graph
        owner._sync_ops()
        op = owner._ops[node.id]
        if fn is None:
            return [None] * len(op.inputs)
        grads = [None if g is None else owner._ops[g[0].id].outputs[g[1]] for g in output_grads]
        name_scope = f"{op.name}_grad/" if in_body else f"{scope}{op.name}_grad/"
        reason = f"The gradient function registered as '{gradient_name}'"
        with owner.as_default(), _func_graph.sealed(owner if in_body else None, reason):
            with owner.name_scope(name_scope):
                results = fn(op, *grads)
            if not isinstance(results, (list, tuple)):
                results = [results]
            if len(results) != len(op.inputs):
                raise ValueError(f"{reason} returned {len(results)} gradients for op "
                                 f"'{op.name}', which has {len(op.inputs)} inputs; return one "
                                 "(or None) per input.")
            return [None if g is None else
                    _ops.convert_to_tensor(g, dtype=inp.dtype)._as_node_output()
                    for inp, g in zip(op.inputs, results)]

    return call


def stop_gradient(input, name=None):  # noqa: A002 - TensorFlow's name
    """Its input, treated as a constant by tf.gradients."""
    value = _ops.convert_to_tensor(input)
    return _ops.apply_op("StopGradient", [value], name=name or "StopGradient").outputs[0]
