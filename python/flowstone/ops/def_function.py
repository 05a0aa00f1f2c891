"""tf.function (tf.contrib.eager.defun): a Python function traced into a graph function.

Each distinct input signature (tensor dtypes and shapes, Python values, variables) is traced once
with framework/func_graph.py into a function of a private graph's library, called there by a
(Stateful)PartitionedCall node; a session on that graph compiles the call once (the cached plan
of call ops), and each later call feeds the eager inputs straight into that plan. With
autograph=True (the default) the traced function is first converted (flowstone/autograph), so
Python `if`, `while` and `for` on tensors build tf.cond and tf.while_loop.
"""

import functools
import types

import numpy as np

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.autograph import conversion as _autograph
from flowstone.framework import eager as _eager
from flowstone.framework import ops as _ops
from flowstone.framework.func_graph import FuncGraph
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import basic_ops
from flowstone.ops import variables as _variables
from flowstone.ops.composite_specs import RaggedTensorSpec, SparseTensorSpec, type_spec_from_value
from flowstone.ops.dataset_structure import TensorSpec
from flowstone.ops.ragged_tensor import RaggedTensor
from flowstone.util import nest
from flowstone.util.tf_export import tf_export


def _is_tensor_like(value):
    return isinstance(value, (_ops.Tensor, np.ndarray, TensorSpec))


_COMPOSITE_SPECS = (SparseTensorSpec, RaggedTensorSpec)
_COMPOSITE_VALUES = (SparseTensor, RaggedTensor)


def _composite_spec(value, spec=None):
    """The spec of a SparseTensor or RaggedTensor argument (or of its signature's spec), which
    the trace takes as its component tensors; None for anything else."""
    if isinstance(spec, _COMPOSITE_SPECS):
        return spec
    if isinstance(value, _COMPOSITE_SPECS):
        return value
    if isinstance(value, _COMPOSITE_VALUES):
        return type_spec_from_value(value)
    return None


def _leaf_key(value):
    """What makes two calls share a trace: a tensor's dtype and shape, a variable's identity, a
    Python value's value."""
    if isinstance(value, TensorSpec):
        shape = value.shape
        return ("tensor", value.dtype.name,
                None if shape.rank is None else tuple(shape.as_list()))
    if isinstance(value, (_ops.Tensor, np.ndarray)):
        dtype = value.dtype.name if isinstance(value, _ops.Tensor) else np.dtype(value.dtype).name
        return ("tensor", dtype, tuple(value.shape))
    if isinstance(value, _variables.Variable):
        return ("variable", id(value))
    if _composite_spec(value) is not None:
        return ("composite", repr(_composite_spec(value)))
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))
    return ("python", type(value).__name__, value)


class ConcreteFunction:
    """One trace: a graph function for one input signature, compiled once and called with
    eager tensors."""

    def __init__(self, name, python_function, args, kwargs, input_signature):
        self._python_function = python_function
        self._outer = _ops.Graph()
        self._outer._eager_outer = True  # variables made while tracing are eager ones
        self.graph = FuncGraph(name, self._outer)
        flat_inputs = nest.flatten((args, kwargs))
        specs = (list(input_signature) if input_signature is not None else
                 [v if isinstance(v, TensorSpec) else None for v in flat_inputs])
        self._tensor_positions = []
        traced = []
        with self.graph.as_default():
            for position, value in enumerate(flat_inputs):
                composite = _composite_spec(value, specs[position] if position < len(specs)
                                            else None)
                if composite is not None:
                    # Flattened to its component tensors in the signature, rebuilt here.
                    traced.append(composite._from_components([
                        self.graph.add_input(c.dtype, c.shape)
                        for c in composite._component_specs]))
                    self._tensor_positions.append((position, composite))
                elif _is_tensor_like(value):
                    spec = specs[position] if position < len(specs) and specs[position] else None
                    dtype = spec.dtype if spec else _dtypes.as_dtype(value.dtype)
                    shape = spec.shape if spec else TensorShape(list(value.shape))
                    traced.append(self.graph.add_input(dtype, shape))
                    self._tensor_positions.append((position, dtype))
                else:
                    traced.append(value)
            targs, tkwargs = nest.pack_sequence_as((args, kwargs), traced)
            outputs = python_function(*targs, **tkwargs)
            self._structure = outputs
            flat_out = [v.value() if isinstance(v, _variables.Variable) else v
                        for v in nest.flatten(outputs)]
            # Per output: "tensor", a composite's spec (returned as its components) or None
            # (a Python value, returned as it is).
            self._out_kinds = [
                "tensor" if isinstance(v, _ops.Tensor) else _composite_spec(v) for v in flat_out]
            self._flat_out = flat_out
            out_tensors = []
            for kind, v in zip(self._out_kinds, flat_out):
                if kind == "tensor":
                    out_tensors.append(v)
                elif kind is not None:
                    out_tensors.extend(kind._to_components(v))
            # Stateful ops (variable updates) run even when no output depends on them.
            stateful = [op for op in self.graph.get_operations()
                        if op._node.is_stateful and op.type not in ("Placeholder", "Const")]
            with self.graph.control_dependencies(stateful):
                rets = [basic_ops.identity(v) for v in out_tensors]
                if not rets:
                    rets = [basic_ops.identity(_ops.constant(0))]
        self._captured = [tensor for tensor, _ in self.graph.eager_captures]
        arg_placeholders = list(self.graph.inputs) + [p for _, p in self.graph.eager_captures]
        self.graph.add_to_library(arg_placeholders, rets)
        self._num_rets = len(rets)
        with self._outer.as_default():
            feeds = [_ops.apply_op("Placeholder", [], {"dtype": p.dtype, "shape": p.shape},
                                   name="arg").outputs[0] for p in arg_placeholders]
            call_type = ("StatefulPartitionedCall" if self.graph.is_stateful()
                         else "PartitionedCall")
            call = _ops.apply_op(call_type, [feeds], {
                "Tout": [t.dtype for t in rets], "f": self.graph.name}, name=call_type)
        try:
            from flowstone.client import session as _session
            self._session = _C.Session.create(
                self._outer._c, _session.rewrite_overrides(_session.DEFAULT_REWRITE_OPTIONS))
            self._callable = self._session.make_callable(
                [f._as_node_output() for f in feeds],
                [t._as_node_output() for t in call.outputs], [])
        except _C.StatusError as e:
            raise _errors.from_status_error(e, as_op_error=False) from None
        self.structured_input_signature = (args, kwargs)

    @property
    def inputs(self):
        return list(self.graph.inputs)

    @property
    def outputs(self):
        return list(self.graph.outputs)

    @property
    def captured_inputs(self):
        return list(self._captured)

    def _call_flat(self, flat_inputs):
        handles = []
        for position, kind in self._tensor_positions:
            value = flat_inputs[position]
            if isinstance(kind, _COMPOSITE_SPECS):
                handles.extend(_eager.to_eager(t, dtype=c.dtype)._handle for t, c in zip(
                    kind._to_components(value), kind._component_specs))
            else:
                handles.append(_eager.to_eager(value, dtype=kind)._handle)
        handles.extend(t._handle for t in self._captured)
        try:
            results = self._callable.call_eager(handles)
        except _C.StatusError as e:
            raise _errors.from_status_error(e) from None
        results = iter(results[:self._num_rets])
        flat = []
        for kind, value in zip(self._out_kinds, self._flat_out):
            if kind == "tensor":
                flat.append(_eager.EagerTensor(next(results)))
            elif kind is not None:
                flat.append(kind._from_components([_eager.EagerTensor(next(results))
                                                   for _ in kind._component_specs]))
            else:
                flat.append(value)
        return nest.pack_sequence_as(self._structure, flat)

    def __call__(self, *args, **kwargs):
        return self._call_flat(nest.flatten((args, kwargs)))


class Function:
    """The callable tf.function returns: traces per input signature, then runs the trace."""

    def __init__(self, python_function, name=None, input_signature=None, autograph=True):
        self._python_function = python_function
        self._name = name or getattr(python_function, "__name__", "function")
        self._input_signature = (None if input_signature is None
                                 else list(nest.flatten(input_signature)))
        self._autograph = autograph
        self._traced_function = None  # the function traced: converted once, when first needed
        self._traces = {}
        self._variables_made = False
        functools.update_wrapper(self, python_function)

    @property
    def python_function(self):
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    def experimental_get_tracing_count(self):
        return len(self._traces)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        # A method: one Function per instance, so traces see that instance's variables.
        bound = instance.__dict__.get(("_tf_function", id(self)))
        if bound is None:
            bound = Function(types.MethodType(self._python_function, instance), self._name,
                             self._input_signature, self._autograph)
            instance.__dict__[("_tf_function", id(self))] = bound
        return bound

    def _check_signature(self, flat_inputs):
        signature = self._input_signature
        ok = len(flat_inputs) == len(signature)
        for value, spec in zip(flat_inputs, signature):
            if not ok:
                break
            if isinstance(spec, _COMPOSITE_SPECS) or _composite_spec(value) is not None:
                ok = spec.is_compatible_with(value)
                continue
            if not _is_tensor_like(value) and not isinstance(value, (int, float, bool, list)):
                ok = False
                break
            tensor = value if isinstance(value, (_ops.Tensor, TensorSpec)) else \
                _ops.convert_to_tensor(value, dtype=spec.dtype)
            ok = spec.is_compatible_with(tensor)
        if not ok:
            raise TypeError(f"Binding inputs to tf.function `{self._name}` failed due to "
                            f"`Python inputs incompatible with input_signature:\n  inputs: "
                            f"{tuple(flat_inputs)}\n  input_signature: {tuple(signature)}`.")

    def _flat_inputs(self, args, kwargs):
        """The call's leaves: with an input_signature, one per positional argument (a list stands
        for one tensor); without, every leaf of the arguments' structure."""
        if self._input_signature is None:
            return nest.flatten((args, kwargs))
        if kwargs:
            raise TypeError(f"tf.function `{self._name}` with an input_signature takes its "
                            "arguments by position.")
        return list(args)

    def _traced(self):
        """What traces run: the Python function converted by AutoGraph (once; a method's
        function is converted once for all instances), or as written with autograph=False."""
        if self._traced_function is None:
            function = self._python_function
            if self._autograph:
                if isinstance(function, types.MethodType):
                    function = types.MethodType(_autograph.convert_or_keep(function.__func__),
                                                function.__self__)
                else:
                    function = _autograph.convert_or_keep(function)
            self._traced_function = function
        return self._traced_function

    def _status(self):
        return _autograph.control_status(_autograph.Status.ENABLED if self._autograph
                                         else _autograph.Status.DISABLED)

    def _concrete(self, args, kwargs):
        flat_inputs = self._flat_inputs(args, kwargs)
        if self._input_signature is not None:
            self._check_signature(flat_inputs)
            key = ("signature",)
            args = tuple(self._input_signature)
            kwargs = {}
        else:
            key = (len(args), tuple(sorted(kwargs)), tuple(_leaf_key(v) for v in flat_inputs))
        concrete = self._traces.get(key)
        if concrete is None:
            before = _variables.eager_variable_count()
            with self._status():
                concrete = ConcreteFunction(self._name, self._traced(), args, kwargs,
                                            self._input_signature)
            if _variables.eager_variable_count() != before:
                if self._traces:
                    raise ValueError(
                        "tf.function only supports singleton tf.Variables created on the first "
                        "call. Make sure the tf.Variable is only created once or created "
                        "outside tf.function. See "
                        "https://www.tensorflow.org/guide/function#creating_tfvariables for "
                        "more information.")
                self._variables_made = True
            self._traces[key] = concrete
        return concrete

    def get_concrete_function(self, *args, **kwargs):
        """The trace for these arguments (TensorSpecs stand for any tensor of their kind)."""
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(self._input_signature)
        return self._concrete(args, kwargs)

    def __call__(self, *args, **kwargs):
        if not _ops.executing_eagerly() or _C.eager_tape_recording() or _run_eagerly:
            # In a graph (or another function's trace), the body's ops go there directly. Under
            # a recording GradientTape the body runs eagerly, op by op, so that the tape sees
            # its ops (a traced call is not recorded); eager tensors have truth values, so the
            # Python function runs as written.
            if _ops.executing_eagerly():
                return self._python_function(*args, **kwargs)
            with self._status():
                return self._traced()(*args, **kwargs)
        concrete = self._concrete(args, kwargs)
        return concrete._call_flat(self._flat_inputs(args, kwargs))


_run_eagerly = False


@tf_export("config.run_functions_eagerly", "config.experimental_run_functions_eagerly")
def run_functions_eagerly(run_eagerly):
    """With True, every tf.function runs its Python function eagerly, op by op, instead of its
    trace (for debugging: prints and breakpoints in the body then work)."""
    global _run_eagerly
    _run_eagerly = bool(run_eagerly)


@tf_export("config.functions_run_eagerly", "config.experimental_functions_run_eagerly")
def functions_run_eagerly():
    """Whether run_functions_eagerly(True) is in effect."""
    return _run_eagerly


@tf_export("function", "contrib.eager.defun")
def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_relax_shapes=None,
             experimental_compile=None, experimental_follow_type_hints=None):
    """Makes `func` a traced graph function (as a decorator, with or without arguments)."""
    if func is None:
        return lambda f: Function(f, input_signature=input_signature, autograph=autograph)
    return Function(func, input_signature=input_signature, autograph=autograph)
