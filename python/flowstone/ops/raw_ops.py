"""tf.raw_ops: every registered op as a function, made from the op registry's schema.

`tf.raw_ops.ConcatV2(values=[a, b], axis=0)` adds (or, eagerly, runs) one op with exactly the
inputs and attrs given, as in TensorFlow: arguments are keywords only, named as the op's inputs
and attrs; the attrs the inputs determine (`T`, `N`, type lists) are inferred and may be left
out. One output gives a Tensor, a list output a list, several outputs a namedtuple with the
outputs' names, none the Operation. The functions are made on first use from `_C.op_def`, so an
op registered later (a custom op library, see `tf.load_op_library`) has one too.
"""

import collections
import inspect
import keyword
import sys

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import export_value as _export_value

_made = {}

# Arguments TensorFlow's Python API renames (its api_defs): (op, schema name) -> keyword.
_RENAMED = {
    **{(op, "reduction_indices"): "axis" for op in ("All", "Any", "Max", "Mean", "Min", "Prod",
                                                    "Sum")},
    ("ExpandDims", "dim"): "axis", ("Split", "split_dim"): "axis",
    ("SplitV", "split_dim"): "axis", ("Squeeze", "squeeze_dims"): "axis",
    ("Select", "t"): "x", ("Select", "e"): "y", ("Where", "input"): "condition",
}


def _keyword(op_type, name):
    """The keyword an argument takes: TensorFlow's rename if it has one, else the schema's
    name, with "_" appended to Python keywords (`lambda_`) as TensorFlow does."""
    name = _RENAMED.get((op_type, name), name)
    return name + "_" if keyword.iskeyword(name) else name


class _Schema:
    """The parts of an op's schema a call needs, read once from the registry."""

    def __init__(self, op_type):
        op_def = _C.op_def(op_type)
        self.op_type = op_type
        # (name, fixed dtype enum or 0, type attr, number attr, type-list attr) per input/output.
        self.inputs = op_def["input_types"]
        self.outputs = op_def["output_types"]
        self.attr_types = {name: kind for name, kind, _ in op_def["attrs"]}
        self.attr_defaults = op_def["attr_defaults"]
        inferred = set()
        for _, _, type_attr, number_attr, type_list_attr in self.inputs:
            inferred.update(a for a in (type_attr, number_attr, type_list_attr) if a)
        self.inferred_attrs = inferred
        # The attrs a caller passes: those the inputs determine are inferred, as in TensorFlow.
        self.attrs = [name for name, _, _ in op_def["attrs"] if name not in inferred]
        self.required_attrs = [name for name, _, has_default in op_def["attrs"]
                               if not has_default and name not in inferred]

    def signature(self):
        params = [inspect.Parameter(_keyword(self.op_type, name), inspect.Parameter.KEYWORD_ONLY)
                  for name, *_ in self.inputs]
        for name in self.attrs:
            default = (inspect.Parameter.empty if name in self.required_attrs else None)
            params.append(inspect.Parameter(_keyword(self.op_type, name),
                                            inspect.Parameter.KEYWORD_ONLY, default=default))
        params.append(inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None))
        return inspect.Signature(params)


def _is_tensor_like(value):
    return isinstance(value, _ops.Tensor) or hasattr(value, "_as_graph_element")


def _dtype_of(value):
    dtype = getattr(value, "dtype", None)
    return _dtypes.as_dtype(dtype) if dtype is not None else None


def _convert(value, dtype, arg_name, schema):
    if dtype is not None and dtype == _dtypes.resource and hasattr(value, "handle"):
        return value.handle
    try:
        return _ops.convert_to_tensor(value, dtype=dtype, name=arg_name)
    except (TypeError, ValueError) as e:
        raise TypeError(f"Input '{arg_name}' of '{schema.op_type}' Op: {e}") from None


def _infer_type_attr(type_attr, schema, given, attrs):
    """The dtype an input typed by `type_attr` converts to: the one an earlier input fixed, else
    the dtype of the first tensor among the inputs it types, else None (the value decides)."""
    if attrs.get(type_attr) is not None:
        return _dtypes.as_dtype(attrs[type_attr])
    for name, _, other_attr, number_attr, _ in schema.inputs:
        if other_attr != type_attr or name not in given:
            continue
        values = given[name] if number_attr else [given[name]]
        for value in values if isinstance(values, (list, tuple)) else [values]:
            if _is_tensor_like(value) and _dtype_of(value) is not None:
                return _dtype_of(value)
    return None


def _convert_inputs(schema, given, attrs):
    converted = []
    for name, fixed, type_attr, number_attr, type_list_attr in schema.inputs:
        value = given[name]
        is_list = bool(number_attr or type_list_attr)
        if is_list and not isinstance(value, (list, tuple)):
            raise TypeError(f"Expected list for '{name}' argument to '{schema.op_type}' Op, not "
                            f"{value!r}.")
        if fixed:
            dtype = _dtypes.from_enum(fixed)
        elif type_attr:
            dtype = _infer_type_attr(type_attr, schema, given, attrs)
        else:
            dtype = None
        if type_list_attr:
            converted.append([_convert(v, None, name, schema) for v in value])
            continue
        if number_attr:
            tensors = [_convert(v, dtype, name, schema) for v in value]
            converted.append(tensors)
        else:
            tensors = [_convert(value, dtype, name, schema)]
            converted.append(tensors[0])
        if type_attr and tensors and attrs.get(type_attr) is None:
            attrs[type_attr] = tensors[0].dtype  # later inputs of this attr convert to it
    return converted


def _output_lengths(schema, attrs, converted):
    """How many tensors each output argument has."""
    lengths = []
    for name, _, _, number_attr, type_list_attr in schema.outputs:
        attr = number_attr or type_list_attr
        if not attr:
            lengths.append(1)
            continue
        value = attrs.get(attr) if attr not in schema.inferred_attrs else None
        if value is None:
            for (in_name, _, _, in_number, in_types), tensors in zip(schema.inputs, converted):
                if attr in (in_number, in_types):
                    value = tensors
                    break
        if value is None:
            value = schema.attr_defaults.get(attr)
        lengths.append(value if isinstance(value, int) else len(value or []))
    return lengths


def _make(op_type):
    schema = _Schema(op_type)
    keyword_to_name = {_keyword(op_type, n): n for n, *_ in schema.inputs}
    keyword_to_name.update({_keyword(op_type, n): n for n in schema.attrs})
    Outputs = (collections.namedtuple(op_type, [_keyword(op_type, n) for n, *_ in schema.outputs])
               if len(schema.outputs) > 1 else None)

    def raw_op(*args, **kwargs):
        if args:
            raise TypeError(f"tf.raw_ops.{op_type}(...) takes keyword arguments only (named "
                            f"after the op's inputs and attrs), got {len(args)} positional.")
        name = kwargs.pop("name", None)
        unknown = sorted(k for k in kwargs if k not in keyword_to_name)
        if unknown:
            raise TypeError(f"tf.raw_ops.{op_type} got unexpected keyword arguments {unknown}; "
                            f"it takes {sorted(keyword_to_name)} and name.")
        given = {keyword_to_name[k]: v for k, v in kwargs.items()}
        missing = [n for n, *_ in schema.inputs if n not in given]
        missing += [n for n in schema.required_attrs if n not in given]
        if missing:
            raise TypeError(f"tf.raw_ops.{op_type} is missing required arguments "
                            f"{[_keyword(op_type, n) for n in missing]}.")
        attrs = {n: given[n] for n in schema.attrs if n in given}
        converted = _convert_inputs(schema, given, attrs)
        # Attrs inferred from the inputs are left to the C++ graph, which checks them.
        c_attrs = {n: v for n, v in attrs.items() if n in given}
        op = _ops.apply_op(op_type, converted, c_attrs, name=name or op_type)
        outputs = list(op.outputs)
        if not schema.outputs:
            return None if _ops.executing_eagerly() else op
        grouped = []
        for (out_name, _, _, number_attr, type_list_attr), length in zip(
                schema.outputs, _output_lengths(schema, attrs, converted)):
            if number_attr or type_list_attr:
                grouped.append(outputs[:length])
            else:
                grouped.append(outputs[0])
                length = 1
            outputs = outputs[length:]
        return Outputs(*grouped) if Outputs else grouped[0]

    raw_op.__name__ = raw_op.__qualname__ = op_type
    raw_op.__signature__ = schema.signature()
    raw_op.__doc__ = f"The {op_type} op, called with keyword arguments (see tf.raw_ops)."
    return raw_op


def __getattr__(op_type):
    """tf.raw_ops.<OpType>: made on first use for any registered op."""
    fn = _made.get(op_type)
    if fn is not None:
        return fn
    if op_type.startswith("_") or op_type not in _C.op_names():
        why = ("it is an internal op" if op_type in _C.op_names() else
               "no op of that type is registered")
        raise AttributeError(f"module 'flowstone.raw_ops' has no attribute '{op_type}': {why}")
    fn = _made[op_type] = _make(op_type)
    return fn


def __dir__():
    # Ops named with a leading underscore (_FusedConv2D) are internal, as in TensorFlow.
    return sorted(n for n in _C.op_names() if not n.startswith("_"))


_export_value("raw_ops", sys.modules[__name__])
