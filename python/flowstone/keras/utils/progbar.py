"""Keras's progress bar, line for line: `469/469 [====...] - 2s 4ms/step - loss: 0.0712`.

On a terminal (verbose=1) one line is redrawn in place; when stdout is not a terminal every
update is its own line, so logs stay readable. verbose=2 prints one line per epoch.
"""

import sys
import time

import numpy as np

from flowstone.util.tf_export import tf_export


def _format_time(seconds, unit):
    if seconds >= 1 or seconds == 0:
        return f" {seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f" {seconds * 1e3:.0f}ms/{unit}"
    return f" {seconds * 1e6:.0f}us/{unit}"


def _format_value(value):
    return f" {value:.4f}" if abs(value) > 1e-3 else f" {value:.4e}"


@tf_export("keras.utils.Progbar")
class Progbar:
    def __init__(self, target, width=30, verbose=1, interval=0.05, stateful_metrics=None,
                 unit_name="step", stream=None):
        self.target, self.width, self.verbose = target, width, verbose
        self.interval, self.unit_name = interval, unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._stream = stream
        stream = self.stream
        self._dynamic = hasattr(stream, "isatty") and stream.isatty()
        self._total_width = 0
        self._seen_so_far = 0
        self._values = {}
        self._order = []
        self._start = time.time()
        self._last_update = 0.0
        self._time_after_first_step = None
        self._epoch_end = None

    @property
    def stream(self):
        return self._stream or sys.stdout

    def _step_time(self, current, now):
        if not current:
            return 0.0
        if self._time_after_first_step is not None and current > 1:
            per_step = (now - self._time_after_first_step) / (current - 1)
        else:
            per_step = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return per_step

    def _averages(self):
        out = ""
        for key in self._order:
            total, count = self._values[key]
            out += f" - {key}:" + _format_value(float(np.mean(total / max(1, count))))
        return out

    def update(self, current, values=None, finalize=None):
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        for key, value in values or []:
            if key not in self._order:
                self._order.append(key)
            if key in self.stateful_metrics:
                self._values[key] = [value, 1]
            else:
                seen = max(current - self._seen_so_far, 1)
                old = self._values.get(key, [0.0, 0])
                self._values[key] = [old[0] + value * seen, old[1] + seen]
        self._seen_so_far = current
        now = time.time()
        if current == self.target:
            self._epoch_end = now
        if self.verbose == 1:
            self._update_bar(current, now, finalize)
        elif self.verbose == 2 and finalize:
            self._update_epoch_line(current, now)

    def _update_bar(self, current, now, finalize):
        if now - self._last_update < self.interval and not finalize:
            return
        previous_width = self._total_width
        if self.target is not None:
            digits = int(np.log10(self.target)) + 1
            bar = f"{current:{digits}d}/{self.target} ["
            filled = int(self.width * current / self.target)
            if filled > 0:
                bar += "=" * (filled - 1) + (">" if current < self.target else "=")
            bar += "." * (self.width - filled) + "]"
        else:
            bar = f"{current:7d}/Unknown"
        self._total_width = len(bar)
        per_step = self._step_time(current, now)
        if self.target is None or finalize:
            info = f" - {now - self._start:.0f}s" + _format_time(per_step, self.unit_name)
        else:
            eta = per_step * (self.target - current)
            if eta > 3600:
                eta_text = f"{int(eta // 3600)}:{int((eta % 3600) // 60):02d}:{int(eta % 60):02d}"
            elif eta > 60:
                eta_text = f"{int(eta // 60)}:{int(eta % 60):02d}"
            else:
                eta_text = f"{int(eta)}s"
            info = f" - ETA: {eta_text}"
        info += self._averages()
        self._total_width += len(info)
        if self._dynamic:
            if previous_width > self._total_width:
                info += " " * (previous_width - self._total_width)
            message = "\b" * previous_width + "\r" + bar + info + ("\n" if finalize else "")
        else:
            message = bar + info + "\n"
        self.stream.write(message)
        self.stream.flush()
        self._last_update = now

    def _update_epoch_line(self, current, now):
        digits = int(np.log10(self.target)) + 1
        line = f"{current:{digits}d}/{self.target} - {now - self._start:.0f}s"
        line += self._averages()
        if self._epoch_end is not None:
            epoch_time = self._epoch_end - self._start
            line += " -" + _format_time(epoch_time, "epoch")
            line += " -" + _format_time(epoch_time / self.target, self.unit_name)
        self.stream.write(line + "\n")
        self.stream.flush()

    def add(self, n, values=None):
        self.update(self._seen_so_far + n, values)
