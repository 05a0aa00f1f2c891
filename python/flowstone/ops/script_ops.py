"""tf.py_func, tf.numpy_function and tf.py_function: a Python function as a graph op.

The op (PyFunc, or PyFuncStateless) carries a token; its C++ kernel calls back into Python
(python/src/py_func.cc), which finds the function here by token, calls it on numpy values and
checks what it returns. A function stays registered while its graph lives. Gradients come from
`Graph.gradient_override_map({"PyFunc": name})` and `@tf.RegisterGradient(name)`."""

import itertools
import threading
import traceback
import weakref

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import context as _context
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export

_functions = {}  # token -> callable
_tokens = itertools.count()
_lock = threading.Lock()

# Python exceptions and the error each becomes, as in TensorFlow; any other is UNKNOWN.
_ERROR_CODES = [
    ((ValueError, TypeError), _errors.INVALID_ARGUMENT),
    ((StopIteration, IndexError), _errors.OUT_OF_RANGE),
    ((MemoryError,), _errors.RESOURCE_EXHAUSTED),
    ((NotImplementedError,), _errors.UNIMPLEMENTED),
]


def _register(graph, func):
    """A token for `func`, registered while `graph` lives (until the caller removes it when
    `graph` is None: an eager call)."""
    with _lock:
        token = f"pyfunc_{next(_tokens)}"
        _functions[token] = func
    if graph is not None:
        # A function body (a FuncGraph: Dataset.map's, tf.cond's) is dropped after tracing while
        # its library function lives on in the outermost graph: the function stays as long as
        # that graph.
        while getattr(graph, "outer_graph", None) is not None:
            graph = graph.outer_graph
        weakref.finalize(graph, _functions.pop, token, None)
    return token


def register_eager_function(func, out_types):
    """A token under which the runner calls `func` on EagerTensors, eagerly, its results
    converted to `out_types` (as tf.py_function's body); registered until unregister(token)."""
    return _register(None, _eager_body(func, out_types))


def unregister(token):
    _functions.pop(token, None)


def _error_code(exception):
    for kinds, code in _ERROR_CODES:
        if isinstance(exception, kinds):
            return code
    return _errors.UNKNOWN


def _as_argument(array):
    # Scalars arrive as numpy scalars (np.float32(3.0)), as in TensorFlow; a scalar string is
    # already bytes.
    if not isinstance(array, np.ndarray):
        return array
    return array[()] if array.ndim == 0 else array


def _call_for_kernel(token, args, dtype_enums):
    """Called by the PyFunc kernel: (0, "", values) or (error code, message, None)."""
    func = _functions.get(token)
    if func is None:
        return (_errors.INTERNAL, f"Could not find the Python function registered as {token}; "
                "its graph has been deleted.", None)
    try:
        result = func(*[_as_argument(a) for a in args])
    except Exception as e:  # noqa: BLE001 - every failure goes back to the session as a Status
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        return (_error_code(e), f"{type(e).__name__}: {e}\n{text}", None)
    values = list(result) if isinstance(result, (list, tuple)) else \
        ([] if result is None and not dtype_enums else [result])
    if len(values) != len(dtype_enums):
        return (_errors.INVALID_ARGUMENT, f"pyfunc {token} returned {len(values)} values, but "
                f"expects {len(dtype_enums)}", None)
    arrays = []
    for i, (value, enum) in enumerate(zip(values, dtype_enums)):
        expected = _dtypes.from_enum(enum)
        array = np.asarray(value, order="C")
        if expected == _dtypes.string and array.dtype.kind in "SU":
            # bytes and str (numpy's fixed-width string arrays) are strings, as in TensorFlow.
            array = np.vectorize(lambda v: v.encode() if isinstance(v, str) else bytes(v),
                                 otypes=[object])(array) if array.size else \
                np.zeros(array.shape, dtype=object)
        if array.dtype != expected.as_numpy_dtype:
            got = _dtypes.as_dtype(array.dtype) if array.dtype != object else None
            got_name = got._short_name if got is not None else str(array.dtype)
            return (_errors.INVALID_ARGUMENT, f"{i}-th value returned by {token} is {got_name}, "
                    f"but expects {expected._short_name}", None)
        arrays.append(array)
    return (0, "", arrays)


def _py_func(func, inp, Tout, stateful, name):  # noqa: N803 - TensorFlow's name
    single = not isinstance(Tout, (list, tuple))
    out_types = [_dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    inputs = [_ops.convert_to_tensor(x) for x in inp]
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    if _ops.executing_eagerly():
        # The op runs now: the function is needed for this call only.
        token = _register(None, func)
        try:
            op = _ops.apply_op(op_type, [inputs], {"token": token, "Tout": out_types},
                               name=name or op_type)
        finally:
            _functions.pop(token, None)
    else:
        graph = inputs[0].graph if inputs else _ops.get_default_graph()
        token = _register(graph, func)
        with graph.as_default():
            op = _ops.apply_op(op_type, [inputs], {"token": token, "Tout": out_types},
                               name=name or op_type)
    outputs = list(op.outputs)
    if single:
        return outputs[0] if outputs else op
    return outputs


@tf_export("py_func")
def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803 - TensorFlow's name
    """An op computing `func(*values of inp)` in Python, on numpy arrays. `Tout` is a dtype
    (one output tensor) or a list of dtypes (a list of tensors); the function must return arrays
    of exactly those dtypes. Errors in the function fail the step with their traceback."""
    return _py_func(func, inp, Tout, stateful, name)


@tf_export("numpy_function")
def numpy_function(func, inp, Tout, stateful=True, name=None):  # noqa: N803
    """tf.py_func under its TensorFlow 2 name."""
    return _py_func(func, inp, Tout, stateful, name)


def _eager_body(func, out_types):
    """`func` as py_func calls it, on numpy values, but running as tf.py_function's body does:
    eagerly in this thread, on EagerTensors, its results converted to Tout's dtypes."""
    def call(*arrays):
        from flowstone.framework import eager as _eager  # loaded with eager mode's machinery
        with _context.state.eager_in_this_thread():
            result = func(*[_eager.to_eager(a) for a in arrays])
            values = list(result) if isinstance(result, (list, tuple)) else \
                ([] if result is None and not out_types else [result])
            arrays_out = []
            for value, dtype in zip(values, out_types):
                if isinstance(value, _ops.Tensor):
                    value = _eager.to_eager(value).numpy()
                elif not isinstance(value, (np.ndarray, np.generic)):
                    # Python values convert to the declared dtype, as convert_to_tensor does.
                    value = _eager.to_eager(value, dtype=dtype).numpy()
                arrays_out.append(value)
            return arrays_out + values[len(arrays_out):]
    return call


@tf_export("py_function", "contrib.eager.py_func")
def py_function(func, inp, Tout, name=None):  # noqa: N803 - TensorFlow's name
    """An op computing `func(*inp)` in Python, where `func` receives EagerTensors and may run
    TensorFlow ops on them eagerly, also in a graph-mode program (TensorFlow 2's py_function).
    It returns tensors (or Python values) of the dtypes in `Tout`."""
    single = not isinstance(Tout, (list, tuple))
    out_types = [_dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    return _py_func(_eager_body(func, out_types), inp, Tout, True, name)
