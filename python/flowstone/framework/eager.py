"""Eager execution's Python side: EagerTensor and the function `apply_op` calls in eager mode.

Every op goes to `_C.eager_execute`, which runs it through the C++ kernel cached for its
signature (see include/flowstone/eager.h); this module only converts arguments and wraps the
resulting handles.
"""

import numpy as np

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import context as _context
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape


def _numpy_text(tensor, is_repr=False):
    """TensorFlow's rendering of a tensor's value in repr/str (numpy's, summarised by numpy)."""
    value = tensor._numpy()
    if is_repr:
        text = repr(value.item()) if np.isscalar(value) else repr(value)
    else:
        text = str(value)
    return "\n" + text if "\n" in text else text


class EagerTensor(_ops.Tensor):
    """A tensor with a value: the Python face of a C++ TensorHandle (a reference-counted buffer
    on a device), which it keeps alive."""

    __slots__ = ("_handle",)

    def __init__(self, handle):  # noqa: super().__init__ would look for an op
        self._handle = handle
        self._op = None
        self._value_index = 0
        self._dtype = _dtypes.from_enum(handle.dtype)
        self._shape = None

    # --- what a graph tensor has and an eager one does not -------------------------------------
    @property
    def op(self):
        raise AttributeError("Tensor.op is undefined when eager execution is enabled.")

    @property
    def graph(self):
        raise AttributeError("Tensor.graph is undefined when eager execution is enabled.")

    @property
    def name(self):
        raise AttributeError("Tensor.name is undefined when eager execution is enabled.")

    def consumers(self):
        raise AttributeError("Tensor.consumers is undefined when eager execution is enabled.")

    def eval(self, feed_dict=None, session=None):
        raise NotImplementedError("eval is not supported when eager execution is enabled, is "
                                  ".numpy() what you're looking for?")

    def _as_node_output(self):
        raise TypeError("An eager tensor cannot be an input of a graph op outside a "
                        "tf.function; pass its value (tensor.numpy()) instead.")

    # --- value ----------------------------------------------------------------------------------
    @property
    def shape(self):
        if self._shape is None:
            self._shape = TensorShape(list(self._handle.shape))
        return self._shape

    def set_shape(self, shape):
        if not self.shape.is_compatible_with(shape):
            raise ValueError(f"Tensor's shape {self.shape} is not compatible with supplied "
                             f"shape {TensorShape(shape)}.")

    @property
    def device(self):
        return self._handle.device

    @property
    def backing_device(self):
        return self._handle.device

    def _numpy(self):
        array = self._handle.numpy()  # a scalar string comes back as bytes
        return array[()] if isinstance(array, np.ndarray) and array.ndim == 0 else array

    def numpy(self):
        """The value: a numpy array sharing the tensor's memory (a numpy scalar for scalars)."""
        return self._numpy()

    def __array__(self, dtype=None, copy=None):
        array = self._handle.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def cpu(self):
        return EagerTensor(_C.eager_copy_to_device(self._handle, "/device:CPU:0"))

    def gpu(self, gpu_index=0):
        return EagerTensor(_C.eager_copy_to_device(self._handle, f"/device:GPU:{gpu_index}"))

    def ref(self):
        return _TensorRef(self)

    # --- Python protocol ---------------------------------------------------------------------
    def __repr__(self):
        return (f"<tf.Tensor: shape={self.shape}, dtype={self._dtype.name}, "
                f"numpy={_numpy_text(self, is_repr=True)}>")

    def __str__(self):
        return f"tf.Tensor({_numpy_text(self)}, shape={self.shape}, dtype={self._dtype.name})"

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    def __eq__(self, other):
        from flowstone.ops import math_ops
        try:
            return math_ops.equal(self, other)
        except (TypeError, ValueError, _errors.OpError):
            return False

    def __ne__(self, other):
        from flowstone.ops import math_ops
        try:
            return math_ops.not_equal(self, other)
        except (TypeError, ValueError, _errors.OpError):
            return True

    def __bool__(self):
        return bool(self._numpy())

    def __int__(self):
        return int(self._numpy())

    def __float__(self):
        return float(self._numpy())

    def __index__(self):
        if not self._dtype.is_integer:
            raise TypeError(f"Only integer tensors can be used as an index, got "
                            f"{self._dtype.name}.")
        return int(self._numpy())

    def __len__(self):
        if self.shape.rank == 0:
            raise TypeError("Scalar tensor has no `len()`")
        return self.shape[0]

    def __iter__(self):
        if self.shape.rank == 0:
            raise TypeError("Cannot iterate over a scalar tensor.")
        return (self[i] for i in range(self.shape[0]))

    def __format__(self, format_spec):
        if self.shape.rank == 0:
            return format(self._numpy().item(), format_spec)
        return format(str(self), format_spec)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        from flowstone.ops import basic_ops
        return basic_ops.constant, (self._numpy(),)


def _fast_operator(op_type, method_name, reverse=False):
    """`x + y` on two eager tensors of one dtype (or a tensor and a Python number its dtype
    holds) goes straight to the executor; anything else takes the general operator."""

    def method(self, other):
        other_type = type(other)
        if _ops._op_callbacks:  # every op goes through apply_op, where the callbacks see it
            return getattr(_ops.Tensor, method_name)(self, other)
        if other_type is EagerTensor:
            if other._dtype is not self._dtype:
                return getattr(_ops.Tensor, method_name)(self, other)
            other_handle = other._handle
        elif ((other_type is float and self._dtype.is_floating) or
              (other_type is int and -2**31 <= other < 2**31 and
               (self._dtype.is_floating or self._dtype.is_integer))):
            other_handle = _C.eager_tensor(other, self._handle.dtype, "")
        else:
            return getattr(_ops.Tensor, method_name)(self, other)
        inputs = [other_handle, self._handle] if reverse else [self._handle, other_handle]
        try:
            (out,) = _C.eager_execute(op_type, inputs, {}, _current_device(), "")
        except _C.StatusError as error:
            _raise(error)
        return EagerTensor(out)

    method.__name__ = method_name
    return method


# `x + y` on two eager tensors of one dtype runs in C++ with no Python frame
# (python/src/eager_operators.cc), which calls the Python operator for everything else.
_C.eager_register_tensor_class(EagerTensor, [_dtypes._BY_ENUM.get(i) for i in
                                             range(max(_dtypes._BY_ENUM) + 1)])
for _op_type, _name, _reverse in [
        ("AddV2", "__add__", False), ("AddV2", "__radd__", True), ("Sub", "__sub__", False),
        ("Sub", "__rsub__", True), ("Mul", "__mul__", False), ("Mul", "__rmul__", True)]:
    _method = _fast_operator(_op_type, _name, _reverse)
    setattr(EagerTensor, _name, _method if _reverse else _C.eager_operator(_op_type, _method))


class _TensorRef:
    """`tensor.ref()`: a hashable reference to a tensor (by identity); `.deref()` gives it back."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    def deref(self):
        return self._tensor

    def __hash__(self):
        return id(self._tensor)

    def __eq__(self, other):
        return isinstance(other, _TensorRef) and other._tensor is self._tensor


class _EagerOperation:
    """What apply_op returns in eager mode: the op type and its outputs (the values)."""

    __slots__ = ("type", "outputs")

    def __init__(self, op_type, outputs):
        self.type = op_type
        self.outputs = outputs

    @property
    def name(self):
        raise AttributeError("Operation.name is undefined when eager execution is enabled.")

    def __repr__(self):
        return f"<tf.Operation (eager) type={self.type}>"


def _eager_site():
    """The user's frame that called the op: 'File "x.py", line 3, in f' (the Python line of an
    eager error)."""
    return _ops._creation_site(limit=1)


def _current_device():
    if not _C.eager_device_scopes():
        return ""  # no tf.device scope is open anywhere
    graph = _ops.get_default_graph()
    stack = graph._ctx().device_stack
    return graph._device_before_functions()[0] if stack else ""


def to_eager(value, dtype=None):
    """An EagerTensor for `value` (a Python value, numpy array, variable or tensor)."""
    if isinstance(value, EagerTensor):
        if dtype is not None and value.dtype != dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with "
                             f"dtype {value.dtype.name}: {value!r}")
        return value
    tensor = _ops.convert_to_tensor(value, dtype=dtype)
    if not isinstance(tensor, EagerTensor):
        raise TypeError(f"An op outside of a tf.function was passed the graph tensor {tensor!r}; "
                        "graph tensors cannot be inputs of eagerly run ops.")
    return tensor


def _raise(error):
    """Raises the tf.errors exception for a failed eager op, with the Python line that ran it."""
    site = _eager_site()
    exc = _errors.from_status_error(error)
    if isinstance(exc, _errors.OpError) and site:
        exc._eager_site = site
    raise exc.with_traceback(None) from None


def execute(op_type, inputs, attrs, name):
    """Runs one op eagerly; returns an _EagerOperation holding its outputs."""
    if op_type == "Const":
        value = attrs["value"]
        dtype = attrs["dtype"]
        handle = _C.eager_tensor(value, _dtypes.core_enum(dtype), _current_device())
        return _EagerOperation(op_type, [EagerTensor(handle)])
    handles = []
    for item in inputs:
        if isinstance(item, (list, tuple)):
            for sub in item:
                handles.append((sub if type(sub) is EagerTensor else to_eager(sub))._handle)
        else:
            handles.append((item if type(item) is EagerTensor else to_eager(item))._handle)
    c_attrs = {k: _ops._attr_for_c(v) for k, v in attrs.items() if v is not None} if attrs else {}
    try:
        outputs = _C.eager_execute(op_type, handles, c_attrs, _current_device(), "")
    except _C.StatusError as error:
        _raise(error)
    return _EagerOperation(op_type, [EagerTensor(h) for h in outputs])


_context.state.execute = execute
