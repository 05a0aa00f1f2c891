"""Runs adversarial calls of some ops in this process and reports per op, for fuzz_ops.py.

    python fuzz_worker.py --ops A,B --calls 1000 --seed 1 --results R.jsonl --current C.txt

Each call builds a fresh graph from a `Call` (op_strategies.py), runs it in a session with a CPU
memory limit, and must either succeed or raise `_C.StatusError`. Before each call its description
is appended to the --current file (read_last_call), so that when a crash or a sanitizer report
kills this process the driver knows which op and which call did it. Any other Python exception is recorded as a
failure too (a C++ exception that escaped a kernel, a binding that raised the wrong thing).
"""

import argparse
import json
import os
import pickle
import struct
import sys
import time
import warnings

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings

from flowstone import _C

import op_strategies

# Each session may allocate this much for tensors; bigger requests must fail with a Status.
SESSION_MEMORY_LIMIT = 256 << 20


class CallFailure(Exception):
    pass


def build_and_run(call):
    """Builds `call` into a new graph and runs it; a failure is a raised `_C.StatusError`."""
    graph = _C.Graph()
    endpoints, feeds, feed_values, setup_targets = [], [], [], []
    for i, item in enumerate(call.inputs):
        dtype = op_strategies.DTYPE_ENUM[item.dtype]
        if item.kind == "variable":
            node = graph.add_node("VarHandleOp", f"var{i}", [], [],
                                  {"dtype": dtype, "shape": None, "shared_name": f"v{i}"}, "", "")
            if item.value is not None:
                value = graph.add_node("Const", f"init_value{i}", [], [],
                                       {"value": item.value, "dtype": dtype}, "", "")
                setup_targets.append(graph.add_node("AssignVariableOp", f"init{i}",
                                                    [(node, 0), (value, 0)], [], {}, "", ""))
        elif item.kind == "tensorlist":
            tensor = graph.add_node("Const", f"list_items{i}", [], [],
                                    {"value": item.value, "dtype": dtype}, "", "")
            element_shape = graph.add_node(
                "Const", f"element_shape{i}", [], [],
                {"value": np.array(np.shape(item.value)[1:], np.int32),
                 "dtype": op_strategies.DTYPE_ENUM["int32"]}, "", "")
            node = graph.add_node("TensorListFromTensor", f"in{i}",
                                  [(tensor, 0), (element_shape, 0)], [], {}, "", "")
        elif item.kind == "const":
            node = graph.add_node("Const", f"in{i}", [], [], {"value": item.value, "dtype": dtype},
                                  "", "")
        else:
            node = graph.add_node("Placeholder", f"in{i}", [], [],
                                  {"dtype": dtype, "shape": item.declared_shape}, "", "")
            if item.kind == "feed":
                feeds.append((node, 0))
                feed_values.append(item.value)
        endpoints.append((node, 0))
    for value in call.attrs.values():
        if isinstance(value, str) and value.startswith("fuzz_") and not graph.has_function(value):
            add_library_function(graph, value)
    op = graph.add_node(call.op, "fuzzed", endpoints, [], dict(call.attrs), "", "")
    session = _C.Session.create(graph, {"cpu_memory_limit_bytes": SESSION_MEMORY_LIMIT})
    try:
        if setup_targets:
            session.make_callable([], [], setup_targets)()
        fetches = [(op, i) for i in range(op.num_outputs)]
        run = session.make_callable(feeds, fetches, [] if fetches else [op])
        run(*feed_values)
        # Twice: a second run reuses the pooled run state and any cached kernel state.
        run(*feed_values)
    finally:
        session.close()


# The executor appends this to errors raised while running a node (AnnotateNodeError).
FUZZED_NODE_ERROR = "[[node fuzzed ("


def add_library_function(graph, name):
    """Adds the function op_strategies.library_functions named: `fuzz_identity_<dtypes>` returns
    its arguments, `fuzz_false_<dtypes>` a false scalar (a loop that stops at once)."""
    _, kind, signature = name.split("_", 2)
    body = _C.Graph.function_body(graph)
    args = [(body.add_node("Placeholder", f"arg{i}", [], [],
                           {"dtype": op_strategies.DTYPE_ENUM[t], "shape": None}, "", ""), 0)
            for i, t in enumerate(signature.split("-") if signature else [])]
    if kind == "false":
        rets = [(body.add_node("Const", "false", [], [],
                               {"value": np.array(False), "dtype": op_strategies.DTYPE_ENUM["bool"]},
                               "", ""), 0)]
    else:
        rets = [(body.add_node("Identity", f"ret{i}", [arg], [], {}, "", ""), 0)
                for i, arg in enumerate(args)]
    graph.add_function(name, body, args, rets)


def fuzz_op(op, calls, rng_seed, current):
    counts = {"op": op, "calls": 0, "ok": 0, "status_error": 0, "kernel": 0, "failures": []}

    def one(call):
        # The call goes to the --current file before it runs, pickled (printing it costs more
        # than running it); the file is rewritten every 256 calls to stay small.
        if counts["calls"] % 256 == 0:
            os.ftruncate(current, 0)
        record = pickle.dumps((op, counts["calls"], call))
        os.write(current, struct.pack("<Q", len(record)) + record)
        counts["calls"] += 1
        try:
            build_and_run(call)
            counts["ok"] += 1
            counts["kernel"] += 1
        except _C.StatusError as e:
            counts["status_error"] += 1
            if FUZZED_NODE_ERROR in str(e):
                counts["kernel"] += 1
        except Exception as e:  # noqa: BLE001 - every non-Status exception is a finding
            counts["failures"].append(f"{type(e).__name__}: {e} in {call!r}"[:2000])

    @seed(rng_seed)
    @settings(max_examples=calls, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(op_strategies.calls(op))
    def run_examples(call):
        one(call)

    # Hypothesis stops early when it believes the space is exhausted; go on with new seeds.
    rounds = 0
    while counts["calls"] < calls and rounds < 20:
        run_examples()
        rounds += 1
        rng_seed += 1000003
    return counts


def read_last_call(path):
    """The (op, index, Call) last written to a --current file, or None."""
    with open(path, "rb") as f:
        data = f.read()
    last, pos = None, 0
    while pos + 8 <= len(data):
        (size,) = struct.unpack_from("<Q", data, pos)
        if pos + 8 + size > len(data):
            break
        last = pickle.loads(data[pos + 8:pos + 8 + size])
        pos += 8 + size
    return last


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", required=True)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--results", required=True)
    parser.add_argument("--current", required=True)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    current = os.open(args.current, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC)
    with open(args.results, "a") as results:
        for op in args.ops.split(","):
            start = time.monotonic()
            counts = fuzz_op(op, args.calls, args.seed, current)
            counts["seconds"] = round(time.monotonic() - start, 1)
            results.write(json.dumps(counts) + "\n")
            results.flush()
            print(f"{op}: {counts['calls']} calls, {counts['ok']} ok, {counts['status_error']} "
                  f"Status errors, {len(counts['failures'])} failures, {counts['seconds']} s",
                  flush=True)
    os.ftruncate(current, 0)
    os.close(current)
    return 0


if __name__ == "__main__":
    sys.exit(main())
