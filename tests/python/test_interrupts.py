"""Runs stopped by Ctrl-C, by a deadline and by Session.close(); signals during kernels; fork.

Each scenario that sends signals or forks runs in a subprocess of its own, so a crash or a hang
fails one test instead of the test run.
"""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import flowstone as tf

# A chain of float32 matrix products that takes seconds: oneDNN's sgemm the whole time.
CHAIN = """
import os, signal, sys, threading, time
import numpy as np
import flowstone as tf

def chain(n, size=1200):
    value = np.random.RandomState(0).rand(size, size).astype(np.float32) / size
    x = tf.constant(value)
    y = x
    for _ in range(n):
        y = tf.matmul(y, x)
    return x, y

def signal_after(delay, sig=signal.SIGINT):
    def send():
        time.sleep(delay)
        os.kill(os.getpid(), sig)
    thread = threading.Thread(target=send)
    thread.start()
    return thread
"""


def run_script(body, timeout=240):
    code = CHAIN + textwrap.dedent(body)
    # The scenarios interrupt long CPU computations (a GPU would finish them at once).
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_ctrl_c_raises_keyboard_interrupt_and_the_session_stays_usable():
    # Issue 16's first crash, in a loop: before the fix the heap was corrupted every time.
    out = run_script("""
        x, y = chain(400)
        small = tf.matmul(x[:2, :3], x[:3, :2])
        with tf.Session() as sess:
            sess.run(tf.matmul(x, x))
            for attempt in range(5):
                sender = signal_after(0.3)
                start = time.time()
                try:
                    sess.run(y)
                    print("completed")
                except KeyboardInterrupt:
                    print("interrupted", time.time() - start)
                sender.join()
                got = sess.run(small)
                ref = np.random.RandomState(0).rand(1200, 1200).astype(np.float32) / 1200
                np.testing.assert_allclose(got, ref[:2, :3] @ ref[:3, :2], rtol=1e-5)
    """)
    lines = out.split()
    assert lines.count("interrupted") == 5, out
    # The chain takes far longer than this on any machine; the interrupt stopped it.
    latencies = [float(v) - 0.3 for k, v in zip(lines[::2], lines[1::2]) if k == "interrupted"]
    assert max(latencies) < 3.0, latencies


def test_signals_during_gemm_leave_memory_and_results_intact():
    # A Python handler that does not raise: every signal lands while sgemm runs, the run goes
    # on, and its result is bit-identical to the run without signals.
    out = run_script("""
        x, y = chain(60)
        received = []
        signal.signal(signal.SIGUSR1, lambda sig, frame: received.append(sig))
        with tf.Session() as sess:
            quiet = sess.run(y)
            stop = threading.Event()
            sent = []
            def pester():
                while not stop.is_set():
                    os.kill(os.getpid(), signal.SIGUSR1)
                    sent.append(1)
                    time.sleep(0.003)
            thread = threading.Thread(target=pester)
            thread.start()
            for _ in range(3):
                noisy = sess.run(y)
                assert np.array_equal(noisy, quiet)
            stop.set()
            thread.join()
        print("signals", len(sent), len(received))
    """)
    # Pending signals coalesce, so the handler runs at least once per run, not once per signal.
    _, sent, received = out.split()
    assert int(sent) > 10 and int(received) >= 1, out


def test_a_handler_installed_with_signal_signal_runs_and_default_handling_comes_back():
    out = run_script("""
        x, y = chain(40)
        calls = []
        signal.signal(signal.SIGINT, lambda sig, frame: calls.append(sig))
        with tf.Session() as sess:
            expected = sess.run(tf.matmul(x, x))
            sender = signal_after(0.1)
            # The user's handler does not raise: the run is not stopped, and the handler runs.
            sess.run(y)
            sender.join()
            print("handler calls", len(calls))
            signal.signal(signal.SIGINT, signal.default_int_handler)
            longer = chain(400)[1]
            sender = signal_after(0.3)
            try:
                sess.run(longer)  # a new signature: the Ctrl-C hook is placed again
                print("completed")
            except KeyboardInterrupt:
                print("interrupted")
            sender.join()
    """)
    assert "handler calls 1" in out, out
    assert "interrupted" in out, out


def _long_chain(n=300, size=1024):
    value = np.random.RandomState(1).rand(size, size).astype(np.float32) / size
    with tf.device("/cpu:0"):  # seconds on the CPU (a GPU would finish before any deadline)
        x = tf.constant(value)
        y = x
        for _ in range(n):
            y = tf.matmul(y, x)
    return x, y


def test_run_options_timeout_raises_deadline_exceeded_and_the_session_stays_usable():
    x, y = _long_chain()
    with tf.Session() as sess:
        start = time.time()
        with pytest.raises(tf.errors.DeadlineExceededError,
                           match="^Timed out waiting for notification$"):
            sess.run(y, options=tf.RunOptions(timeout_in_ms=50))
        assert time.time() - start < 3.0  # far less than the whole chain
        assert sess.run(tf.constant(3.0) * 2.0) == 6.0
        # A compiled callable takes the same options.
        call = sess.make_callable(y, accept_options=True)
        with pytest.raises(tf.errors.DeadlineExceededError):
            call(options=tf.RunOptions(timeout_in_ms=50))


def test_operation_timeout_in_ms_is_the_default_deadline():
    x, y = _long_chain()
    with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=50)) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError,
                           match="Timed out waiting for notification"):
            sess.run(y)
        np.testing.assert_array_equal(sess.run(x[0, :2]), sess.run(x)[0, :2])


def test_close_from_another_thread_cancels_the_run():
    x, y = _long_chain()
    sess = tf.Session()
    sess.run(x)
    errors = []

    def run():
        try:
            sess.run(y)
        except Exception as e:  # noqa: BLE001 - the test inspects it
            errors.append(e)

    runner = threading.Thread(target=run)
    runner.start()
    time.sleep(0.3)
    sess.close()
    runner.join(timeout=30)
    assert not runner.is_alive()
    assert len(errors) == 1
    assert isinstance(errors[0], tf.errors.CancelledError)
    assert errors[0].message == "Run call was cancelled"
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session"):
        sess.run(x)
    # The process is usable: a new session runs.
    with tf.Session() as again:
        assert again.run(tf.constant(2.0) + 1.0) == 3.0


def test_fork_child_runs_sessions_made_before_and_after_the_fork():
    out = run_script("""
        a = tf.constant(np.arange(4096, dtype=np.float32).reshape(64, 64) / 4096)
        b = tf.matmul(a, a)
        c = tf.reduce_sum(tf.matmul(tf.tile(a, [8, 8]), tf.tile(a, [8, 8])))
        sess = tf.Session()
        expected_b, expected_c = sess.run([b, c])  # the pools have threads now
        pid = os.fork()
        if pid == 0:
            try:
                got_b, got_c = sess.run([b, c])
                with tf.Session() as fresh:
                    got_c2 = fresh.run(c)
                ok = (np.array_equal(got_b, expected_b) and got_c == expected_c
                      and got_c2 == expected_c)
                os._exit(0 if ok else 3)
            except BaseException:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
        print("parent", sess.run(c) == expected_c)
    """, timeout=120)
    assert "child 0" in out, out
    assert "parent True" in out, out


# One convolution of about 0.1 G multiply-adds per image (7x7 filter, 32 -> 64 channels): with
# 256 float32 images (oneDNN) or 32 float64 ones (reference loops), a single kernel that runs for
# a tenth of a second to seconds, depending on the load.
LONG_CONVOLUTION = """
    dtype, batch = tf.float32, 256
    x = tf.ones([batch, 32, 32, 32], dtype)
    f = tf.ones([7, 7, 32, 64], dtype) / 1000.0
    y = tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME")
    probe = tf.reduce_sum(y[0, 16, 16])
    with tf.Session() as sess:
        start = time.time()
        full_value = sess.run(probe)
        full = time.time() - start
"""


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctrl_c_stops_a_single_long_convolution(dtype):
    # Cancellation used to be polled between nodes only inside a convolution: the interrupt
    # waited for the whole kernel. Now its chunks of images (oneDNN, float32) and its rows
    # (reference loops, float64) poll the run's token.
    body = LONG_CONVOLUTION
    if dtype == "float64":
        body = body.replace("tf.float32, 256", "tf.float64, 32")
    out = run_script(body + """
        for attempt in range(3):
            sender = signal_after(min(0.3, full / 4))
            start = time.time()
            try:
                sess.run(probe)
                print("completed")
            except KeyboardInterrupt:
                print("interrupted", time.time() - start, full)
            sender.join()
        assert sess.run(probe) == full_value  # the session is still usable
    """)
    lines = [line.split() for line in out.splitlines()]
    assert [line[0] for line in lines] == ["interrupted"] * 3, out
    for _, took, full in lines:
        # The uninterrupted kernel ran `full` seconds; stopped, it runs a fraction of it.
        assert float(took) < 0.6 * float(full), out


def test_a_deadline_stops_a_single_long_convolution():
    # The deadline is a fifth of the kernel's uninterrupted time, whatever this machine's speed
    # and load make that: stopped inside the kernel, the run ends well before the kernel would.
    out = run_script(LONG_CONVOLUTION + """
        start = time.time()
        try:
            deadline_ms = max(20, int(full * 1000 / 5))
            sess.run(probe, options=tf.RunOptions(timeout_in_ms=deadline_ms))
            print("completed")
        except tf.errors.DeadlineExceededError:
            print("deadline", time.time() - start, full)
    """)
    kind, took, full = out.split()
    assert kind == "deadline", out
    assert float(took) < 0.6 * float(full), out
