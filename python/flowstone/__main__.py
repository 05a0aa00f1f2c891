"""The `flowstone` command: `flowstone version`, `flowstone ops`, `flowstone doctor`."""

import argparse
import json
import os
import platform
import sys


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def doctor(as_json=False):
    """One screen about this machine: Flowstone, the CPU and its instruction sets, devices."""
    import flowstone as tf
    flags = _cpu_flags()
    isa = {name: name in flags for name in ("avx2", "fma", "avx512f", "amx_tile")}
    report = {
        "flowstone": tf.__version__,
        "python": sys.version.split()[0],
        "cpu": _cpu_model(),
        "cores": tf._C.num_schedulable_cpus(),
        "isa": isa,
        "memory_bytes": tf._C.physical_memory_bytes(),
        "devices": [d.name for d in tf.config.list_logical_devices()],
        "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
        "built_with_cuda": tf.test.is_built_with_cuda(),
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH"),
    }
    if as_json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"Flowstone {report['flowstone']} on Python {report['python']}")
    print(f"CPU: {report['cpu']} ({report['cores']} cores), "
          f"{report['memory_bytes'] / 2**30:.1f} GiB memory")
    print("ISA: " + ", ".join(f"{k.upper()} {'yes' if v else 'no'}" for k, v in isa.items()))
    print(f"Devices: {', '.join(report['devices'])}")
    print(f"CUDA_VISIBLE_DEVICES={report['CUDA_VISIBLE_DEVICES']!s} "
          f"LD_LIBRARY_PATH={report['LD_LIBRARY_PATH']!s}")
    if report["gpus"]:
        print(f"GPUs: {', '.join(report['gpus'])}")
    else:
        print("Verdict: CPU only. This build has no CUDA backend, so every op runs on the CPU.")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="flowstone", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("version", help="print the version")
    sub.add_parser("ops", help="list the registered ops")
    doc = sub.add_parser("doctor", help="explain this machine")
    doc.add_argument("--json", action="store_true", help="the same report as JSON")
    args = parser.parse_args(argv)
    import flowstone as tf
    if args.command == "version":
        print(tf.__version__)
        return 0
    if args.command == "ops":
        for name in tf._C.op_names():
            print(name)
        return 0
    if args.command == "doctor":
        return doctor(args.json)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
