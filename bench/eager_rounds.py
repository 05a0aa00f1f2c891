"""Interleaved rounds of bench_eager.py's quick cases, for comparing builds on a loaded machine.

Each round runs every given (label, python, framework) once, in turn, each in its own process;
the table gives the median over rounds (and the range) per case, and the load average before
and after. Example, this branch against main's build and PyTorch:

    .venv/bin/python bench/eager_rounds.py --rounds 7 \\
        branch=.venv/bin/python:flowstone main=/work/main/.venv/bin/python:flowstone \\
        torch=.venv-peers/bin/python:torch
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_eager.py")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="label=python:framework")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    runs = []
    for spec in args.runs:
        label, rest = spec.split("=", 1)
        python, framework = rest.rsplit(":", 1)
        runs.append((label, python, framework))
    load_before = os.getloadavg()
    results = {label: [] for label, _, _ in runs}
    for _ in range(args.rounds):
        for label, python, framework in runs:
            proc = subprocess.run([python, BENCH, "--framework", framework, "--quick"],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"{label} failed:\n{proc.stderr[-2000:]}")
            results[label].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    load_after = os.getloadavg()
    cases = list(results[runs[0][0]][0])
    print(f"{args.rounds} rounds; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after")
    print(f"{'case (us per call, median [min-max])':<40}" +
          "".join(f"{label:>24}" for label, _, _ in runs))
    for case in cases:
        cells = []
        for label, _, _ in runs:
            values = [r[case] for r in results[label]]
            cells.append(f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]")
        print(f"{case:<40}" + "".join(f"{c:>24}" for c in cells))


if __name__ == "__main__":
    main()
