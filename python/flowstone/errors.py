"""TensorFlow's error classes (tf.errors.*), raised for failed C++ Status values."""

from flowstone import _C

__all__ = [
    "OpError", "CancelledError", "UnknownError", "InvalidArgumentError", "DeadlineExceededError",
    "NotFoundError", "AlreadyExistsError", "PermissionDeniedError", "ResourceExhaustedError",
    "FailedPreconditionError", "AbortedError", "OutOfRangeError", "UnimplementedError",
    "InternalError", "UnavailableError", "DataLossError", "UnauthenticatedError",
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED", "error_code_from_exception_type", "exception_type_from_error_code",
]

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """A failure while running an op: `.op` is the Operation (or None), `.message` the text,
    `.error_code` TensorFlow's canonical code, `.node_def` the node's description."""

    def __init__(self, node_def, op, message, error_code=UNKNOWN):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    def __reduce__(self):
        return type(self), (self._node_def, self._op, self._message)

    def __str__(self):
        text = self._message
        op = self._op
        if op is not None and getattr(op, "_creation_site", ""):
            text += (f"\n\nOriginal stack trace for '{op.name}':\n" + op._creation_site)
        # An op run eagerly has no Operation; the error keeps the Python line that ran it.
        eager_site = getattr(self, "_eager_site", "")
        if eager_site:
            text += "\n\nRaised by the op run at:\n" + eager_site
        return text


def _make(name, code, doc):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc})


CancelledError = _make("CancelledError", CANCELLED, "An operation was cancelled.")
UnknownError = _make("UnknownError", UNKNOWN, "An unknown error.")
InvalidArgumentError = _make("InvalidArgumentError", INVALID_ARGUMENT,
                             "An op received an invalid argument.")
DeadlineExceededError = _make("DeadlineExceededError", DEADLINE_EXCEEDED, "A deadline expired.")
NotFoundError = _make("NotFoundError", NOT_FOUND, "A requested entity was not found.")
AlreadyExistsError = _make("AlreadyExistsError", ALREADY_EXISTS, "An entity already exists.")
PermissionDeniedError = _make("PermissionDeniedError", PERMISSION_DENIED, "Permission denied.")
ResourceExhaustedError = _make("ResourceExhaustedError", RESOURCE_EXHAUSTED,
                               "A resource (usually memory) is exhausted.")
FailedPreconditionError = _make("FailedPreconditionError", FAILED_PRECONDITION,
                                "The system is not in a state to run the op (e.g. an "
                                "uninitialized variable).")
AbortedError = _make("AbortedError", ABORTED, "An operation was aborted.")
OutOfRangeError = _make("OutOfRangeError", OUT_OF_RANGE, "Iterated past the valid range.")
UnimplementedError = _make("UnimplementedError", UNIMPLEMENTED, "Not implemented.")
InternalError = _make("InternalError", INTERNAL, "An internal invariant was broken.")
UnavailableError = _make("UnavailableError", UNAVAILABLE, "The runtime is unavailable.")
DataLossError = _make("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")
UnauthenticatedError = _make("UnauthenticatedError", UNAUTHENTICATED, "No valid credentials.")

_CODE_TO_CLASS = {
    CANCELLED: CancelledError, UNKNOWN: UnknownError, INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError, NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError, PERMISSION_DENIED: PermissionDeniedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError, FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError, OUT_OF_RANGE: OutOfRangeError, UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError, UNAVAILABLE: UnavailableError, DATA_LOSS: DataLossError,
    UNAUTHENTICATED: UnauthenticatedError,
}


def exception_type_from_error_code(code):
    return _CODE_TO_CLASS[code]


def error_code_from_exception_type(cls):
    for code, klass in _CODE_TO_CLASS.items():
        if klass is cls:
            return code
    return UNKNOWN


_PY_TYPES = {"ValueError": ValueError, "TypeError": TypeError, "RuntimeError": RuntimeError,
             "LookupError": LookupError, "NotImplementedError": NotImplementedError}
_DUAL_CLASSES = {}


def _dual_class(op_error_cls, py_cls):
    """A class that is both a tf.errors class and a Python builtin error: TensorFlow raises
    ValueError for a bad feed shape while users catch InvalidArgumentError."""
    key = (op_error_cls, py_cls)
    if key not in _DUAL_CLASSES:
        _DUAL_CLASSES[key] = type(op_error_cls.__name__, (op_error_cls, py_cls), {
            "__module__": __name__,
            "__doc__": f"{op_error_cls.__name__} that is also a {py_cls.__name__}.",
        })
    return _DUAL_CLASSES[key]


def from_status_error(status_error, graph=None, as_op_error=True):
    """Builds the exception for a `_C.StatusError`.

    `graph` resolves the failing node to an Operation. Graph-building errors (as_op_error=False)
    become plain ValueError/TypeError as TensorFlow raises them; run-time errors become the
    tf.errors class, doubled with ValueError/TypeError/RuntimeError when the status asks for one.
    """
    code, message, payloads = status_error.args
    py_type = _PY_TYPES.get(payloads.get("py_type", ""))
    if not as_op_error:
        return (py_type or ValueError)(message)
    if py_type is RuntimeError and code == FAILED_PRECONDITION:
        return RuntimeError(message)
    op = None
    node_name = payloads.get("node")
    if graph is not None and node_name:
        op = graph._operation_by_name_or_none(node_name)
    cls = _CODE_TO_CLASS.get(code, UnknownError)
    if py_type is not None:
        cls = _dual_class(cls, py_type)
    return cls(None, op, message)


StatusError = _C.StatusError
