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


# A run whose inputs come from other ops (a queue, a reader) may wait for elements that never
# come; it ends with DeadlineExceeded after this long.
PRODUCER_RUN_TIMEOUT_MS = 250


def build_and_run(call):
    """Builds `call` into a new graph and runs it; a failure is a raised `_C.StatusError`."""
    graph = _C.Graph()
    feeds, feed_values, setup_targets = [], [], []
    op = add_call(graph, call, "fuzzed", "", feeds, feed_values, setup_targets)
    # Resources and variants have no numpy value: the op runs as a target instead. A dataset
    # (a variant output, with output_types) is also iterated, so that its elements are computed.
    fetches = [(op, i) for i in range(op.num_outputs) if op.output_dtype(i) not in HANDLE_DTYPES]
    targets = [op] if len(fetches) < op.num_outputs or not fetches else []
    next_element = None
    if (op.num_outputs and op.output_dtype(0) == op_strategies.DTYPE_ENUM["variant"] and
            "output_types" in call.attrs):
        next_element = iterate(graph, op, call.attrs)
    session = _C.Session.create(graph, {"cpu_memory_limit_bytes": SESSION_MEMORY_LIMIT})
    try:
        if setup_targets:
            session.make_callable([], [], setup_targets)()
        run = session.make_callable(feeds, fetches, targets)
        timeout = PRODUCER_RUN_TIMEOUT_MS if any(i.kind == "op" for i in call.inputs) else 0
        # Twice: a second run reuses the pooled run state and any cached kernel state.
        for _ in range(2):
            run.call_with_options(timeout, False, 0, *feed_values)
        if next_element is not None:
            initialize, get_next = next_element
            session.make_callable(feeds, [], [initialize])(*feed_values)
            get = session.make_callable([], [(get_next, i) for i in range(get_next.num_outputs)],
                                        [get_next])
            for _ in range(3):  # three elements, or until the dataset ends
                try:
                    get.call_with_options(PRODUCER_RUN_TIMEOUT_MS, False, 0)
                except _C.StatusError as e:
                    if e.args[0] != OUT_OF_RANGE:
                        raise
                    break
    finally:
        session.close()


OUT_OF_RANGE = 11  # the Status code of the end of a dataset
HANDLE_DTYPES = {op_strategies.DTYPE_ENUM["resource"], op_strategies.DTYPE_ENUM["variant"]}


def iterate(graph, dataset, attrs):
    """An iterator over `dataset`'s output 0: (the node that initializes it, IteratorGetNext)."""
    types = {k: attrs[k] for k in ("output_types", "output_shapes") if k in attrs}
    iterator = graph.add_node("IteratorV2", "fuzzed_iterator", [], [], dict(types), "", "")
    initialize = graph.add_node("MakeIterator", "fuzzed_make_iterator",
                                [(dataset, 0), (iterator, 0)], [], {}, "", "")
    get_next = graph.add_node("IteratorGetNext", "fuzzed_get_next", [(iterator, 0)], [],
                              dict(types), "", "")
    return initialize, get_next


def add_call(graph, call, name, prefix, feeds, feed_values, setup_targets):
    """Adds the node of `call` named `name` and its inputs' nodes (named with `prefix`) to
    `graph`; appends what must be fed and the variables' initializers to the lists."""
    endpoints = []
    for i, item in enumerate(call.inputs):
        dtype = op_strategies.DTYPE_ENUM[item.dtype]
        if item.kind == "op":
            node = add_call(graph, item.call, f"{prefix}producer{i}", f"{prefix}producer{i}_",
                            feeds, feed_values, setup_targets)
        elif item.kind == "variable":
            node = graph.add_node("VarHandleOp", f"{prefix}var{i}", [], [],
                                  {"dtype": dtype, "shape": None,
                                   "shared_name": f"{prefix}v{i}"}, "", "")
            if item.value is not None:
                value = graph.add_node("Const", f"{prefix}init_value{i}", [], [],
                                       {"value": item.value, "dtype": dtype}, "", "")
                setup_targets.append(graph.add_node("AssignVariableOp", f"{prefix}init{i}",
                                                    [(node, 0), (value, 0)], [], {}, "", ""))
        elif item.kind == "tensorlist":
            tensor = graph.add_node("Const", f"{prefix}list_items{i}", [], [],
                                    {"value": item.value, "dtype": dtype}, "", "")
            element_shape = graph.add_node(
                "Const", f"{prefix}element_shape{i}", [], [],
                {"value": np.array(np.shape(item.value)[1:], np.int32),
                 "dtype": op_strategies.DTYPE_ENUM["int32"]}, "", "")
            node = graph.add_node("TensorListFromTensor", f"{prefix}in{i}",
                                  [(tensor, 0), (element_shape, 0)], [], {}, "", "")
        elif item.kind == "const":
            node = graph.add_node("Const", f"{prefix}in{i}", [], [],
                                  {"value": item.value, "dtype": dtype}, "", "")
        else:
            node = graph.add_node("Placeholder", f"{prefix}in{i}", [], [],
                                  {"dtype": dtype, "shape": item.declared_shape}, "", "")
            if item.kind == "feed":
                feeds.append((node, 0))
                feed_values.append(item.value)
        endpoints.append((node, 0))
    for value in call.attrs.values():
        if isinstance(value, str) and value.startswith("fuzz_") and not graph.has_function(value):
            add_library_function(graph, value)
    return graph.add_node(call.op, name, endpoints, [], dict(call.attrs), "", "")


# The executor appends this to errors raised while running a node (AnnotateNodeError); a
# dataset's errors while it is iterated name the iterator's nodes.
FUZZED_NODE_ERROR = "[[node fuzzed"


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


def write_fuzz_files():
    """The files string inputs name (op_strategies.EDGE_STRINGS), in the current directory (the
    driver starts each worker in its own): op_strategies.FUZZ_FILES, and TFRecords framed and
    checksummed by Flowstone's writer (an empty record, a word, a long one, an Example), so
    that readers and datasets reach their parsers."""
    os.makedirs(op_strategies.FUZZ_DIR, exist_ok=True)
    for name, data in op_strategies.FUZZ_FILES.items():
        with open(os.path.join(op_strategies.FUZZ_DIR, name), "wb") as f:
            f.write(data)
    writer = _C.RecordWriter(os.path.join(op_strategies.FUZZ_DIR, op_strategies.RECORDS_FILE), "")
    for record in [b"", b"hello", b"x" * 1000, op_strategies.EXAMPLE]:
        writer.write(record)
    writer.close()


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
    write_fuzz_files()
    # Horovod's collectives run as a single process of size 1 (no launcher), so that their
    # kernels are reached; an MPI job of several ranks is the Horovod tests' business.
    _C.collectives_init()
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
    _C.collectives_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
