"""`make stress`: the concurrency scenarios, the long leak tests and the C++ concurrency tests,
run under CPU load (busy processes beside them, the condition that made races show), then the
C++ concurrency tests again under ThreadSanitizer. Prints a table of what ran for
docs/RELIABILITY.md and exits non-zero if anything failed.

    python tests/stress/run_stress.py --iterations 10000 --cpp-tests build/release/... \
        --tsan-tests build/tsan/tests/cpp/flowstone_tests
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
# Reports from inside libraries built without TSan (oneDNN), see the file.
TSAN_SUPPRESSIONS = os.path.join(TESTS, "tsan_suppressions.txt")
# The C++ tests that run threads against one session, thread pool or allocator.
CPP_CONCURRENCY_FILTER = ("SessionTest.ManyThreadsRunOneSession:SessionTest.ParallelReaders*:"
                          "ThreadPoolTest.*:BfcAllocatorTest.ConcurrentUse*")
PENDING = {"test_control_flow_": "control flow (tf.cond, tf.while_loop)",
           "test_input_pipeline_": "input pipelines (tf.data)"}


def start_load(count):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop_load(processes):
    for p in processes:
        p.kill()
    for p in processes:
        p.wait()


def run(name, cmd, env=None, timeout=900):
    print(f"== {name}: {' '.join(cmd)}", flush=True)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, timeout=timeout, capture_output=True, text=True)
        output, ok = proc.stdout + proc.stderr, proc.returncode == 0
    except subprocess.TimeoutExpired as e:
        output = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")
        ok = False
    seconds = time.monotonic() - start
    print(output[-3000:] if not ok else output[-600:], flush=True)
    print(f"== {name}: {'ok' if ok else 'FAILED'} in {seconds:.0f} s", flush=True)
    return ok, output, seconds


def gtest_repeat(name, binary, repeat, env=None, timeout=900):
    cmd = [binary, f"--gtest_filter={CPP_CONCURRENCY_FILTER}", f"--gtest_repeat={repeat}",
           "--gtest_brief=1"]
    ok, output, seconds = run(name, cmd, env, timeout)
    # --gtest_brief prints one "[  PASSED  ] N tests." line per repetition.
    passed = sum(int(n) for n in re.findall(r"^\[  PASSED  \] (\d+) test", output, re.M))
    return {"scenario": name, "units": passed, "unit": "test runs", "ok": ok, "repeat": repeat,
            "seconds": round(seconds)}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=10000)
    parser.add_argument("--leak-scale", type=int, default=10)
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the tests")
    parser.add_argument("--cpp-tests", help="the release flowstone_tests binary")
    parser.add_argument("--cpp-repeat", type=int, default=500)
    parser.add_argument("--tsan-tests", help="flowstone_tests built with ThreadSanitizer")
    parser.add_argument("--tsan-repeat", type=int, default=50)
    parser.add_argument("--report", help="write the table's rows here as JSON")
    args = parser.parse_args()

    rows, ok = [], True
    with tempfile.TemporaryDirectory(prefix="stress_") as tmp:
        report = os.path.join(tmp, "scenarios.jsonl")
        env = dict(os.environ, FLOWSTONE_STRESS_ITERATIONS=str(args.iterations),
                   FLOWSTONE_STRESS_REPORT=report, FLOWSTONE_LEAK_SCALE=str(args.leak_scale))
        load = start_load(args.load)
        try:
            pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"]
            passed, _, _ = run("python scenarios", pytest + [os.path.join(HERE, "test_stress.py")],
                               env)
            ok &= passed
            if os.path.exists(report):
                with open(report) as f:
                    rows += [json.loads(line) | {"ok": passed} for line in f]
            passed, output, seconds = run(
                "leaks", pytest + [os.path.join(TESTS, "python", "test_leaks.py")], env)
            ok &= passed
            rows.append({"scenario": f"leak tests at scale {args.leak_scale}", "ok": passed,
                         "units": args.leak_scale * 1000, "unit": "training steps",
                         "seconds": round(seconds)})
            if args.cpp_tests:
                row = gtest_repeat("C++ concurrency tests under load", args.cpp_tests,
                                   args.cpp_repeat)
                rows.append(row)
                ok &= row["ok"]
        finally:
            stop_load(load)
        if args.tsan_tests:
            tsan_env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:"
                            f"suppressions={TSAN_SUPPRESSIONS}")
            row = gtest_repeat("C++ concurrency tests under ThreadSanitizer", args.tsan_tests,
                               args.tsan_repeat, tsan_env)
            rows.append(row)
            ok &= row["ok"]

    with open(os.path.join(HERE, "test_stress.py")) as f:
        source = f.read()
    pending = [what for prefix, what in PENDING.items() if f"def {prefix}" not in source]

    print("\n| scenario | units | ok |\n| --- | ---: | --- |")
    for row in rows:
        print(f"| {row['scenario']} | {row['units']} {row['unit']} | "
              f"{'yes' if row['ok'] else 'FAILED'} |")
    for what in pending:
        print(f"| {what} | pending: not in Flowstone yet | - |")
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"rows": rows, "pending": pending}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
