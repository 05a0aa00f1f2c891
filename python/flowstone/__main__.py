"""The `flowstone` command: `flowstone version`, `flowstone ops`, `flowstone doctor`."""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="flowstone", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("version", help="print the version")
    sub.add_parser("ops", help="list the registered ops")
    doc = sub.add_parser("doctor", help="explain this machine: CPU, CUDA libraries, GPUs")
    doc.add_argument("--json", action="store_true", help="the same report as JSON")
    doc.add_argument("--require", choices=["cpu", "gpu"],
                     help="exit with status 1 when this device is not usable")
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
        from flowstone import doctor
        return doctor.run(as_json=args.json, require=args.require)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
