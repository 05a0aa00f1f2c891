"""tf.train.Coordinator: threads that stop together, and the first exception among them."""

import contextlib
import sys
import threading
import time

from flowstone import errors
from flowstone.platform import tf_logging as logging
from flowstone.util.tf_export import tf_export


@tf_export("train.Coordinator")
class Coordinator:
    """Threads poll should_stop(); any of them may request_stop(), optionally with the exception
    that made it stop, which join() re-raises in the joining thread. Exceptions of
    `clean_stop_exception_types` (default: OutOfRangeError) stop without being re-raised."""

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads = set()

    def request_stop(self, ex=None):
        """Asks every thread to stop; `ex` (an exception or an exc_info triple) is re-raised by
        join() unless it is a clean-stop type or comes after the first stop request: errors of
        threads being stopped (a queue runner's enqueue cancelled by the stop) are not news."""
        with self._lock:
            if self._joined or self._stop_event.is_set():
                return
            if ex is not None and self._exc_info_to_raise is None:
                exc_info = ex if isinstance(ex, tuple) else (type(ex), ex, ex.__traceback__)
                if not issubclass(exc_info[0], self._clean_stop_exception_types):
                    logging.info("Error reported to Coordinator: %s", exc_info[1])
                    self._exc_info_to_raise = exc_info
            self._stop_event.set()

    def clear_stop(self):
        """Clears the stop request and any recorded exception, so the coordinator can be
        reused."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self):
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """Within the block, an exception requests a stop (with that exception) instead of
        propagating."""
        try:
            yield
        except:  # noqa: E722 - every exception, as TensorFlow's coordinator catches
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None):
        """Waits until a stop is requested; returns whether it was."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits for the threads (and the registered ones) after a stop is requested, gives them
        `stop_grace_period_secs` to finish, then re-raises the recorded exception. Threads still
        running after the grace period raise RuntimeError unless ignore_live_threads."""
        with self._lock:
            threads = set(threads or []) | self._registered_threads
            self._registered_threads = set()
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        deadline = time.time() + stop_grace_period_secs
        for thread in threads:
            thread.join(max(0.0, deadline - time.time()))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            exc_info = self._exc_info_to_raise
        if exc_info is not None:
            raise exc_info[1].with_traceback(exc_info[2])
        if stragglers:
            message = f"Coordinator stopped with threads still running: {' '.join(stragglers)}"
            if not ignore_live_threads:
                raise RuntimeError(message)
            logging.info(message)

    @property
    def joined(self):
        return self._joined

    def raise_requested_exception(self):
        """Re-raises the exception a stop was requested with, if any."""
        with self._lock:
            exc_info = self._exc_info_to_raise
        if exc_info is not None:
            raise exc_info[1].with_traceback(exc_info[2])


@tf_export("train.LooperThread")
class LooperThread(threading.Thread):
    """A thread that calls `target` (or its own run_loop) until the coordinator stops: every
    `timer_interval_secs` seconds, the first call at once, or back to back when that is None.
    An exception in the loop requests a stop with it."""

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        self._args = args or ()
        self._kwargs = kwargs or {}
        if target is not None:
            self.run_loop = self._run_target
        coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        """Starts and returns a LooperThread calling `target(*args, **kwargs)`."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    def _run_target(self):
        self._target(*self._args, **self._kwargs)

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.time()
                while not self._coord.wait_for_stop(max(0.0, next_time - time.time())):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        """Called once before the loop starts (subclasses override it)."""

    def stop_loop(self):
        """Called once after the loop ends (subclasses override it)."""

    def run_loop(self):
        """One iteration (subclasses override it, or pass `target`)."""
