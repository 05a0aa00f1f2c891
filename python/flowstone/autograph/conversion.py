"""Converting a Python function: its source parsed (inspect, ast), rewritten by the passes
(jumps.py, expressions.py, control_flow.py), compiled with the user's file name and line numbers
(so tracebacks and op creation sites name the user's lines), and rebuilt as a function over the
original's globals and closure cells. Conversion happens once per code object; the function
object made from it is cached per original function object.

`converted_call` is what converted code calls for every call: builtins get their tensor-aware
forms (py_builtins.py), user functions are converted on the way (recursively, as TensorFlow's
AutoGraph does), library code (Flowstone, numpy, the standard library) is called as it is.
"""

import ast
import contextlib
import enum
import functools
import inspect
import sys
import textwrap
import threading
import types
import weakref

from flowstone.autograph import analysis
from flowstone.autograph import control_flow
from flowstone.autograph import expressions
from flowstone.autograph import jumps
from flowstone.autograph import loops
from flowstone.autograph import operators
from flowstone.autograph import py_builtins
from flowstone.platform import tf_logging

# Modules whose functions are never converted: the library's own code and Python's.
_LIBRARY_PREFIXES = ("flowstone", "numpy", "tensorflow", "keras", "tf_keras", "scipy",
                     "torch", "pytest", "_pytest", "absl", "google")


class Status(enum.Enum):
    UNSPECIFIED = 0
    ENABLED = 1
    DISABLED = 2


class _Context(threading.local):
    def __init__(self):
        self.status = [Status.UNSPECIFIED]


_context = _Context()


@contextlib.contextmanager
def control_status(status):
    """While it lasts, code traced here is (ENABLED) or is not (DISABLED) converted: what
    tf.function(autograph=...) says for the functions it traces, Keras layers' `call` included."""
    _context.status.append(status)
    try:
        yield
    finally:
        _context.status.pop()


def current_status():
    return _context.status[-1]


class ConversionError(Exception):
    """A function AutoGraph cannot convert (no source, or source it cannot parse)."""


def _runtime_namespace():
    """What `ag__` names in converted code: the operators, the builtins' forms and
    converted_call."""
    namespace = types.SimpleNamespace(**{n: getattr(module, n) for module in (operators, loops)
                                         for n in dir(module) if not n.startswith("__")})
    namespace.converted_call = converted_call
    return namespace


_AG = None
# original code object -> (converted code object, converted source), or the ConversionError
_code_cache = {}
_function_cache = weakref.WeakKeyDictionary()  # original function -> converted function
_generated_codes = set()  # every code object conversion made, nested ones included
_failed = weakref.WeakKeyDictionary()  # functions that could not be converted -> why
_lock = threading.RLock()


def _collect_codes(code):
    _generated_codes.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _collect_codes(const)


def _parse(func):
    """The ast.FunctionDef of `func`, with the file's line numbers (a lambda's as a def named
    ag__lambda returning its expression)."""
    try:
        # Through the code object: getsource of a function would follow __wrapped__ to the
        # function a decorator wraps, not the wrapper being converted.
        source = textwrap.dedent(inspect.getsource(func.__code__))
    except (OSError, TypeError) as e:
        raise ConversionError(f"could not get source code: {e}") from None
    name = func.__code__.co_name  # a decorator's functools.wraps renames the function
    if name == "<lambda>":
        return _lambda_def(func, source)
    try:
        module = ast.parse(source)
    except SyntaxError as e:
        raise ConversionError(f"could not parse the source code: {e}") from None
    node = module.body[0] if module.body else None
    if not isinstance(node, ast.FunctionDef) or node.name != name:
        raise ConversionError("could not find the function's definition in its source code")
    if _is_generator(node):
        raise ConversionError("generator functions are not converted")
    ast.increment_lineno(node, func.__code__.co_firstlineno - 1)  # getsource starts there
    return node


def _lambda_def(func, source):
    """The lambda of `func` found in the source lines it was defined on: the one on its first
    line with its parameters (when that is ambiguous, or the lines do not parse alone, it is
    not converted)."""
    try:
        module = ast.parse(source)
    except SyntaxError:
        raise ConversionError("the lambda's source lines do not parse alone") from None
    code = func.__code__
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = [n for n in ast.walk(module) if isinstance(n, ast.Lambda) and n.lineno == 1
             and [a.arg for a in n.args.args + n.args.kwonlyargs] == params]
    if len(found) != 1:
        raise ConversionError("could not tell the lambda apart in its source line")
    node = ast.copy_location(ast.FunctionDef(
        name="ag__lambda", args=found[0].args,
        body=[ast.copy_location(ast.Return(value=found[0].body), found[0])],
        decorator_list=[], returns=None, type_comment=None), found[0])
    ast.increment_lineno(node, code.co_firstlineno - 1)
    return node


def _is_generator(func_node):
    def visit(node):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        return any(visit(c) for c in ast.iter_child_nodes(node))
    return any(visit(s) for s in func_node.body)


def _transform(node, func):
    node.decorator_list = []
    params = node.args.posonlyargs + node.args.args
    self_name = params[0].arg if params and "__class__" in func.__code__.co_freevars else None
    jumps.lower_function(node)
    node = expressions.ExpressionTransformer(self_name).visit(node)
    analysis.annotate_liveness(node.body, set())
    node = control_flow.ControlFlowTransformer().visit(node)
    return node


def _compile(func):
    """(code object, source) of `func` converted."""
    node = _transform(_parse(func), func)
    line = node.lineno
    # A factory binding the names the function closes over (and ag__), so that the converted
    # function is compiled with them as free variables; its cells are then the original's.
    free = [n for n in func.__code__.co_freevars] + ["ag__"]
    factory = ast.FunctionDef(
        name="ag__factory", args=control_flow._arguments([]),
        body=[ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                         value=ast.Constant(value=None)) for n in free] +
        [node, ast.Return(value=ast.Name(id=node.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None)
    module = ast.Module(body=[factory], type_ignores=[])
    _locate(factory, line)
    filename = func.__code__.co_filename
    try:
        code = compile(module, filename, "exec")
    except SyntaxError as e:
        raise ConversionError(f"the converted code does not compile: {e}") from None
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts
                 if isinstance(c, types.CodeType) and c.co_name == node.name)
    return inner, ast.unparse(node)


def _locate(node, line):
    """Gives nodes the converter made the position of the statement they came from (a
    child inherits its parent's), so that errors point at the user's line."""
    if getattr(node, "lineno", None) is None and "lineno" in node._attributes:
        node.lineno = node.end_lineno = line
        node.col_offset = node.end_col_offset = 0
    elif "lineno" in node._attributes:
        line = node.lineno
        if getattr(node, "end_lineno", None) is None or node.end_lineno < node.lineno:
            node.end_lineno, node.end_col_offset = node.lineno, node.col_offset
    for child in ast.iter_child_nodes(node):
        _locate(child, line)


def _converted_code(func):
    code = func.__code__
    with _lock:
        found = _code_cache.get(code)
        if found is None:
            try:
                found = _compile(func)
                _collect_codes(found[0])
            except ConversionError as e:
                found = e  # remembered: the same code fails the same way
            _code_cache[code] = found
    if isinstance(found, ConversionError):
        raise found
    return found


def convert(func):
    """`func` (a plain function) converted; raises ConversionError when it cannot be."""
    with _lock:
        converted = _function_cache.get(func)
        if converted is not None:
            return converted
    global _AG
    if _AG is None:
        _AG = _runtime_namespace()
    code, _ = _converted_code(func)
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
    cells["ag__"] = types.CellType(_AG)
    missing = [name for name in code.co_freevars if name not in cells]
    if missing:
        raise ConversionError(f"the converted code reads {missing} from an enclosing function "
                              "that the original does not")
    closure = tuple(cells[name] for name in code.co_freevars)
    converted = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__,
                                   closure)
    converted.__kwdefaults__ = func.__kwdefaults__
    converted.__dict__.update(func.__dict__)
    functools.update_wrapper(converted, func, updated=())
    converted.__autograph_converted__ = True
    with _lock:
        _function_cache[func] = converted
    return converted


def converted_source(func):
    """The converted source of `func` (ast.unparse of the rewritten definition)."""
    return _converted_code(func)[1]


def _is_library(func):
    # The module that defined it (its globals'): functools.wraps copies __module__ from the
    # function a library decorator wraps.
    globals_ = getattr(func, "__globals__", None)
    module = (globals_.get("__name__") if globals_ is not None else None) or \
        getattr(func, "__module__", None) or ""
    top = module.split(".")[0]
    return (top.startswith(_LIBRARY_PREFIXES) or top in sys.stdlib_module_names
            or top == "builtins")


def is_converted(func):
    code = getattr(func, "__code__", None)
    return code is not None and code in _generated_codes


def _should_convert(func):
    return (inspect.isfunction(func) and not inspect.isgeneratorfunction(func) and not inspect.iscoroutinefunction(func)
            and not getattr(func, "__autograph_do_not_convert__", False)
            and not is_converted(func) and not _is_library(func))


def convert_or_keep(func):
    """`func` converted when it can be; otherwise `func` itself, with a warning (once) saying
    why, as TensorFlow's AutoGraph runs what it cannot transform as it is."""
    if not _should_convert(func):
        return func
    if func in _failed:
        return func
    try:
        return convert(func)
    except ConversionError as e:
        _failed[func] = str(e)
        tf_logging.get_logger().warning(
            "AutoGraph could not transform %s and will run it as-is.\nCause: %s\nTo silence "
            "this warning, decorate the function with "
            "@tf.autograph.experimental.do_not_convert", func, e)
        return func


def callable_for(func):
    """What converted code calls for `func`: the converted form of a user function, method
    or callable object; `func` itself for anything else."""
    if inspect.isfunction(func):
        return convert_or_keep(func)
    if inspect.ismethod(func):
        inner = convert_or_keep(func.__func__)
        return func if inner is func.__func__ else types.MethodType(inner, func.__self__)
    if isinstance(func, functools.partial):
        inner = callable_for(func.func)
        return func if inner is func.func else functools.partial(inner, *func.args,
                                                                 **func.keywords)
    if callable(func) and not isinstance(func, type) and not inspect.isbuiltin(func):
        call = getattr(type(func), "__call__", None)
        if inspect.isfunction(call) and _should_convert(call):
            return types.MethodType(convert_or_keep(call), func)
    return func


def converted_call(func, args, kwargs):
    """`func(*args, **kwargs)` as converted code makes it."""
    builtin = py_builtins.replacement(func)
    if builtin is not None:
        return builtin(*args, **kwargs)
    if current_status() is Status.DISABLED:
        return func(*args, **kwargs)
    return callable_for(func)(*args, **kwargs)

