"""tf.logging: TF1's logging functions over Python's `logging`, on the logger "tensorflow".

As in TensorFlow, a program whose root logger has no handler gets one on the "tensorflow" logger
that writes `LEVEL:tensorflow:message` lines to stderr (stdout, and INFO as the level, in an
interactive session). The logger keeps TensorFlow's name so that output and
`logging.getLogger("tensorflow")` settings carry over unchanged.
"""

import logging as _logging
import sys as _sys
import threading as _threading

from flowstone.util.tf_export import export_value, tf_export

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
ERROR = _logging.ERROR
FATAL = _logging.FATAL
for _name in ("DEBUG", "INFO", "WARN", "ERROR", "FATAL"):
    export_value(f"logging.{_name}", globals()[_name])

_logger = None
_logger_lock = _threading.Lock()
_log_counts = {}  # (file, line) of a log_every_n / log_first_n call -> calls so far


def _is_interactive():
    return hasattr(_sys, "ps1") or bool(_sys.flags.interactive)


@tf_export("get_logger")
def get_logger():
    """The "tensorflow" logger, given a stderr handler on first use when the program set up no
    logging of its own."""
    global _logger
    with _logger_lock:
        if _logger is None:
            logger = _logging.getLogger("tensorflow")
            if not _logging.getLogger().handlers:
                if _is_interactive():
                    logger.setLevel(INFO)
                handler = _logging.StreamHandler(_sys.stdout if _is_interactive()
                                                 else _sys.stderr)
                handler.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT, None))
                logger.addHandler(handler)
            _logger = logger
        return _logger


@tf_export("logging.log")
def log(level, msg, *args, **kwargs):
    get_logger().log(level, msg, *args, **kwargs)


@tf_export("logging.debug")
def debug(msg, *args, **kwargs):
    get_logger().debug(msg, *args, **kwargs)


@tf_export("logging.info")
def info(msg, *args, **kwargs):
    get_logger().info(msg, *args, **kwargs)


@tf_export("logging.warning")
def warning(msg, *args, **kwargs):
    get_logger().warning(msg, *args, **kwargs)


@tf_export("logging.warn")
def warn(msg, *args, **kwargs):
    get_logger().warning(msg, *args, **kwargs)


@tf_export("logging.error")
def error(msg, *args, **kwargs):
    get_logger().error(msg, *args, **kwargs)


@tf_export("logging.fatal")
def fatal(msg, *args, **kwargs):
    """Logs at FATAL (shown as CRITICAL); like TensorFlow's, it does not exit."""
    get_logger().fatal(msg, *args, **kwargs)


@tf_export("logging.TaskLevelStatusMessage")
def TaskLevelStatusMessage(msg):  # noqa: N802 - TensorFlow's name
    error(msg)


@tf_export("logging.flush")
def flush():
    for handler in get_logger().handlers:
        handler.flush()


@tf_export("logging.vlog")
def vlog(level, msg, *args, **kwargs):
    get_logger().log(level, msg, *args, **kwargs)


@tf_export("logging.log_if")
def log_if(level, msg, condition, *args):
    """Logs 'msg % args' at `level` when `condition` holds."""
    if condition:
        vlog(level, msg, *args)


def _next_count_of_caller():
    """How often the calling line (two frames up) has counted before: 0, 1, 2, ..."""
    frame = _sys._getframe(2)
    token = (frame.f_code.co_filename, frame.f_lineno)
    with _logger_lock:
        count = _log_counts.get(token, -1) + 1
        _log_counts[token] = count
    return count


@tf_export("logging.log_every_n")
def log_every_n(level, msg, n, *args):
    """Logs 'msg % args' at `level` on the 1st, (n+1)th, (2n+1)th... call from one line."""
    log_if(level, msg, _next_count_of_caller() % n == 0, *args)


@tf_export("logging.log_first_n")
def log_first_n(level, msg, n, *args):
    """Logs 'msg % args' at `level` on the first `n` calls from one line."""
    log_if(level, msg, _next_count_of_caller() < n, *args)


@tf_export("logging.get_verbosity")
def get_verbosity():
    """The effective level of the "tensorflow" logger (WARN unless set)."""
    return get_logger().getEffectiveLevel()


@tf_export("logging.set_verbosity")
def set_verbosity(v):
    """Shows messages at level `v` and above (tf.logging.INFO, ...)."""
    get_logger().setLevel(v)
