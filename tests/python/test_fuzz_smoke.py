"""A few generated calls of every registered op, in this process: the short form of `make fuzz`
(tests/fuzz), so that a new op whose kernel crashes on adversarial input, or raises something
other than a Status error, fails `make test` too. The calls are seeded, so a failure repeats."""

import os
import sys

import pytest

from flowstone import _C

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz"))
fuzz_worker = pytest.importorskip("fuzz_worker", reason="hypothesis is not installed")

CALLS_PER_OP = 5


@pytest.mark.parametrize("op", _C.op_names())
def test_generated_calls_succeed_or_return_a_status_error(op, tmp_path, monkeypatch):
    # String inputs name the fuzz files, and ops like WriteFile write where a path points: both
    # in a directory of this test's own.
    monkeypatch.chdir(tmp_path)
    fuzz_worker.write_fuzz_files()
    current = os.open(tmp_path / "current", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        counts = fuzz_worker.fuzz_op(op, CALLS_PER_OP, 1, current)
    finally:
        os.close(current)
    assert counts["failures"] == []
    assert counts["calls"] >= CALLS_PER_OP
    assert counts["ok"] + counts["status_error"] == counts["calls"]
