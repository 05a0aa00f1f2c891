"""Summarizes a `make fuzz` counts file (fuzz_ops.py --counts) by op family, as the tables of
docs/RELIABILITY.md show it.

    python tests/fuzz/fuzz_summary.py build/asan/fuzz-counts.json [--ops A,B,...]

An op's family is the folder of src/ops/ whose source registers it (the first file with a
registration that has its name in quotes or as a macro's first argument); the op files at the
top of src/ops/ are grouped by what they hold. Prints one Markdown row per family (ops, calls,
fewest calls per op, successes, calls that reached the kernel, non-Status failures, crashes),
then the ops with the fewest calls and those whose calls reached their kernel least often.
"""

import argparse
import collections
import glob
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOP_LEVEL = {
    "array": ["array_ops", "basic_ops", "fill_ops", "shape_ops", "slice_ops",
              "gradient_support_ops"],
    "math": ["compare_ops", "elementwise_binary_ops", "elementwise_unary_ops", "math_ops",
             "matmul_ops", "reduction_ops", "topk_ops"],
    "nn": ["activation_ops", "bias_ops", "conv_ops", "loss_ops", "nn_ops", "pooling_ops"],
    "random": ["random_ops"],
    "training": ["training_ops", "variable_ops"],
}
FAMILY_OF_FILE = {stem: family for family, stems in TOP_LEVEL.items() for stem in stems}


def op_families(ops):
    """{op: family} from the sources that name each op in quotes."""
    sources = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "ops", "**", "*.cc"), recursive=True)):
        rel = os.path.relpath(path, os.path.join(ROOT, "src", "ops"))
        parts = rel.split(os.sep)
        stem = os.path.splitext(parts[-1])[0]
        family = parts[0] if len(parts) > 1 else FAMILY_OF_FILE.get(stem, stem)
        with open(path, encoding="utf-8") as f:
            sources[path] = (family, f.read())

    def family_of(op, need_builder=True):
        # Quoted in a table row or a builder, or named by a registration macro's first argument.
        names = (f'"{op}"', f"({op},")
        return next((family for family, text in sources.values()
                     if ("OpBuilder" in text or "FS_REGISTER_OP" in text or not need_builder) and
                     any(n in text for n in names)), None)

    # Then any file that names it (ops registered through a helper), then its forward op's
    # (gradients that a macro registers beside their op: EluGrad).
    return {op: (family_of(op) or family_of(op, False) or
                 (op.endswith("Grad") and family_of(op[:-4])) or "other") for op in ops}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("counts")
    parser.add_argument("--ops", help="only these ops (comma-separated)")
    parser.add_argument("--low", type=int, default=15, help="how many least-reached ops to list")
    args = parser.parse_args()
    with open(args.counts) as f:
        data = json.load(f)["ops"]
    if args.ops:
        data = {op: data.get(op, {}) for op in args.ops.split(",")}
    families = op_families(data)
    rows = collections.defaultdict(list)
    for op, entry in data.items():
        rows[families[op]].append((op, entry))
    fields = ("calls", "ok", "kernel", "failures", "crashes")
    print("| family | ops | calls | fewest per op | ok | reached the kernel | non-Status "
          "failures | crashes |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    totals = collections.Counter()
    for family in sorted(rows, key=lambda k: (-len(rows[k]), k)):
        sums = collections.Counter()
        for _, entry in rows[family]:
            for key in fields:
                sums[key] += int(entry.get(key, 0))
        fewest = min(int(entry.get("calls", 0)) for _, entry in rows[family])
        totals.update(sums)
        totals["ops"] += len(rows[family])
        print(f"| {family} | {len(rows[family])} | {sums['calls']:,} | {fewest:,} | "
              f"{sums['ok']:,} | {sums['kernel']:,} | {sums['failures']:,} | "
              f"{sums['crashes']:,} |")
    fewest = min(int(entry.get("calls", 0)) for entry in data.values())
    print(f"| **all** | **{totals['ops']}** | **{totals['calls']:,}** | {fewest:,} | "
          f"{totals['ok']:,} | {totals['kernel']:,} | {totals['failures']:,} | "
          f"**{totals['crashes']:,}** |")
    by_calls = sorted(data.items(), key=lambda kv: kv[1].get("calls", 0))
    print("\nfewest calls: " + ", ".join(f"{op} {e.get('calls', 0)}" for op, e in by_calls[:10]))
    by_reach = sorted(data.items(),
                      key=lambda kv: kv[1].get("kernel", 0) / max(kv[1].get("calls", 0), 1))
    print("least often reached the kernel: " + ", ".join(
        f"{op} {e.get('kernel', 0)}/{e.get('calls', 0)}" for op, e in by_reach[:args.low]))


if __name__ == "__main__":
    main()
