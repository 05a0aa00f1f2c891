"""Kernel fuzzing over the whole op registry (`make fuzz`).

    python tests/fuzz/fuzz_ops.py [--calls 1000] [--jobs 2] [--ops A,B] [--report out.json]
                                  [--counts counts.json [--below N]]

Every registered op (`_C.op_names()`) gets `--calls` adversarial calls generated from its schema
(op_strategies.py). The calls run in worker processes (fuzz_worker.py), a batch of ops each, so
that a crash, an abort or a sanitizer report is attributed to its op and call; the driver then
starts a new worker for the ops that remain. Run it under AddressSanitizer + UBSan by building
the ASan extension and preloading the runtime (the Makefile's `fuzz` target does both);
ASAN_OPTIONS below make an allocation beyond --max-allocation-mb a failure as well.

With --counts, per-op totals (calls, successes, Status errors, calls that reached the kernel,
crashes) are added to a JSON file as each op finishes, so that coverage accumulates over runs
that may be stopped at any time; --below N then fuzzes only the ops with fewer than N calls
recorded there, and each run draws new calls (its seed is offset by the runs already recorded).

Exit status 0 means every call either succeeded or returned a Status error.
"""

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fuzz_worker import read_last_call  # noqa: E402
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "AddressSanitizer:DEADLYSIGNAL", "requested allocation size")


def list_ops():
    out = subprocess.run([sys.executable, "-c",
                          "from flowstone import _C; print(','.join(_C.op_names()))"],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip().split(",")


def sanitizer_env(max_allocation_mb):
    env = dict(os.environ)
    # Leaks are the leak tests' business; Python itself leaks at exit.
    options = ["detect_leaks=0", "abort_on_error=1", "allocator_may_return_null=0",
               f"max_allocation_size_mb={max_allocation_mb}", "hard_rss_limit_mb=4096",
               "handle_abort=1",
               "print_summary=1"]
    env["ASAN_OPTIONS"] = ":".join(options + [env.get("ASAN_OPTIONS", "")]).strip(":")
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:" + env.get("UBSAN_OPTIONS", "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, env.get("PYTHONPATH")] if p)
    return env


def describe_last_call(path):
    try:
        found = read_last_call(path)
    except (OSError, EOFError, pickle.UnpicklingError):
        return "unknown (the call record could not be read)"
    if found is None:
        return "none: the worker died outside a call"
    op, index, call = found
    return f"call {index} of {op}: {call!r}"


class CountsFile:
    """Per-op totals over every run, in a JSON file rewritten (atomically) after each op:
    {"runs": R, "ops": {op: {"calls", "ok", "status_error", "kernel", "failures", "crashes",
    "seconds"}}}. Threads of one driver share it; two drivers must not."""

    FIELDS = ("calls", "ok", "status_error", "kernel", "failures", "crashes", "seconds")

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.data = {"runs": 0, "ops": {}}
        if path and os.path.exists(path):
            with open(path) as f:
                self.data = json.load(f)

    def calls(self, op):
        return self.data["ops"].get(op, {}).get("calls", 0)

    def start_run(self):
        with self.lock:
            self.data["runs"] += 1
            self._save()
        return self.data["runs"] - 1

    def add(self, op, **delta):
        with self.lock:
            entry = self.data["ops"].setdefault(op, dict.fromkeys(self.FIELDS, 0))
            for key, value in delta.items():
                entry[key] = round(entry.get(key, 0) + value, 1)
            self._save()

    def add_result(self, result):
        self.add(result["op"], calls=result["calls"], ok=result["ok"],
                 status_error=result["status_error"], kernel=result["kernel"],
                 failures=len(result["failures"]), seconds=result["seconds"])

    def _save(self):
        if not self.path:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)


def read_new_results(path, seen):
    """The complete result lines of a worker's results file after the first `seen`."""
    try:
        with open(path) as f:
            lines = [line for line in f if line.endswith("\n")]
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines[seen:]]


def run_worker(cmd, env, current_path, call_timeout, on_results):
    """Runs one worker in the directory of `current_path` (where the files it fuzzes with, and those
    that ops like WriteFile write, go); kills it when one call runs longer than `call_timeout`
    seconds (a hang counts as a crash). `on_results` gets the worker's finished ops as they appear.
    Returns (returncode or "hang", stderr)."""
    # Ops such as PrintV2 write the fuzzed bytes to stderr: read it back leniently.
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as stderr:
        proc = subprocess.Popen(cmd, env=env, stderr=stderr, text=True,
                                cwd=os.path.dirname(current_path))
        last, since = None, time.monotonic()
        while proc.poll() is None:
            time.sleep(0.5)
            on_results()
            try:
                now = os.stat(current_path).st_size, os.stat(current_path).st_mtime_ns
            except FileNotFoundError:
                now = None
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since > call_timeout:
                proc.kill()
                proc.wait()
                stderr.seek(0)
                return "hang", stderr.read()
        stderr.seek(0)
        return proc.returncode, stderr.read()


def run_batch(ops, args, workdir, env, counts, seed):
    """Runs the worker over `ops` until they are all done; returns (results, crashes)."""
    results_path = os.path.join(workdir, "results.jsonl")
    current_path = os.path.join(workdir, "current.txt")
    results, crashes = [], []
    remaining = list(ops)
    while remaining:
        open(results_path, "w").close()
        cmd = [sys.executable, os.path.join(HERE, "fuzz_worker.py"), "--ops", ",".join(remaining),
               "--calls", str(args.calls), "--seed", str(seed), "--results", results_path,
               "--current", current_path]
        done = []

        def collect():
            for result in read_new_results(results_path, len(done)):
                done.append(result)
                counts.add_result(result)

        returncode, stderr = run_worker(cmd, env, current_path, args.call_timeout, collect)
        collect()
        results += done
        remaining = remaining[len(done):]
        sanitizer = any(marker in stderr for marker in SANITIZER_MARKERS)
        if returncode == 0 and not sanitizer:
            break
        last = describe_last_call(current_path)
        op = remaining[0] if remaining else (done[-1]["op"] if done else "?")
        crashes.append({"op": op, "returncode": returncode, "call": last,
                        "stderr": stderr[-6000:]})
        print(f"CRASH in {op} (exit {returncode}): {last[:500]}", flush=True)
        counts.add(op, crashes=1)
        remaining = remaining[1:]
    return results, crashes


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000, help="adversarial calls per op")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes at once")
    parser.add_argument("--ops", help="comma-separated ops (default: the whole registry)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--call-timeout", type=int, default=120,
                        help="seconds one call may take before it counts as a hang")
    parser.add_argument("--max-allocation-mb", type=int, default=1024)
    parser.add_argument("--report", help="write per-op counts and crashes as JSON here")
    parser.add_argument("--counts", help="add per-op totals to this JSON file as ops finish")
    parser.add_argument("--below", type=int,
                        help="only the ops with fewer than this many calls in --counts")
    args = parser.parse_args()
    if args.below is not None and not args.counts:
        parser.error("--below needs --counts")

    counts = CountsFile(args.counts)
    ops = args.ops.split(",") if args.ops else list_ops()
    if args.below is not None:
        ops = [op for op in ops if counts.calls(op) < args.below]
        print(f"{len(ops)} ops below {args.below} calls in {args.counts}", flush=True)
        if not ops:
            return 0
    # Each run recorded in --counts draws new calls.
    seed = args.seed + 7919 * counts.start_run()
    env = sanitizer_env(args.max_allocation_mb)
    start = time.monotonic()
    batches = [ops[i::args.jobs] for i in range(args.jobs)]
    with tempfile.TemporaryDirectory(prefix="fuzz_ops_") as tmp:
        workdirs = [os.path.join(tmp, str(i)) for i in range(len(batches))]
        for d in workdirs:
            os.makedirs(d)
        with ThreadPoolExecutor(len(batches)) as pool:
            outcomes = list(pool.map(lambda b: run_batch(b[0], args, b[1], env, counts, seed),
                                     zip(batches, workdirs)))
    results = sorted((r for res, _ in outcomes for r in res), key=lambda r: r["op"])
    crashes = [c for _, cs in outcomes for c in cs]
    failures = [(r["op"], f) for r in results for f in r["failures"]]

    print(f"{'op':40s} {'calls':>7s} {'ok':>7s} {'status':>7s} {'kernel':>7s} {'fail':>5s} "
          f"{'s':>6s}")
    for r in results:
        print(f"{r['op']:40s} {r['calls']:7d} {r['ok']:7d} {r['status_error']:7d} "
              f"{r['kernel']:7d} {len(r['failures']):5d} {r['seconds']:6.1f}")
    total = sum(r["calls"] for r in results)
    short = [r["op"] for r in results if r["calls"] < args.calls]
    print(f"\n{len(results)} ops, {total} calls in {time.monotonic() - start:.0f} s; "
          f"{len(crashes)} crashes, {len(failures)} non-Status exceptions, "
          f"{len(short)} ops below {args.calls} calls")
    for op, failure in failures[:50]:
        print(f"FAILURE {op}: {failure}")
    for crash in crashes:
        print(f"CRASH {crash['op']} (exit {crash['returncode']})\n  call: {crash['call']}\n"
              f"  stderr tail:\n{crash['stderr'][-3000:]}")
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"results": results, "crashes": crashes}, f, indent=1)
    return 1 if crashes or failures or short else 0


if __name__ == "__main__":
    sys.exit(main())
