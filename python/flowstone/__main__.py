"""The `flowstone` command: `flowstone version`, `flowstone ops`, `flowstone doctor`,
`flowstone profile script.py [args]`, and `flowstone run script.py [args]` (a TF1 script whose
`import tensorflow` gets Flowstone)."""

import argparse
import os
import runpy
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
    prof = sub.add_parser("profile", help="run a script with its Session.run calls traced and "
                          "print the top ops by time")
    prof.add_argument("--warmup", type=int, default=5,
                      help="untraced runs of each fetch signature first (default 5)")
    prof.add_argument("--steps", type=int, default=20,
                      help="traced runs of each fetch signature after the warm-up (default 20)")
    prof.add_argument("--top", type=int, default=15, help="rows per table (default 15)")
    prof.add_argument("--timeline", metavar="PATH",
                      help="also write the last traced run as a Chrome trace JSON file")
    prof.add_argument("script", help="the Python script to run")
    prof.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    run = sub.add_parser("run", help="run a Python script (or -m module) with `import "
                         "tensorflow` resolving to Flowstone")
    run.add_argument("-m", dest="module", help="run this module as a script, like python -m")
    run.add_argument("script", nargs="?", help="the script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    args = parser.parse_args(argv)
    import flowstone as tf
    if args.command == "run":
        return _run(run, args)
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
    if args.command == "profile":
        from flowstone import profile_script
        return profile_script.run(args.script, args.args, warmup=args.warmup, steps=args.steps,
                                  top=args.top, timeline=args.timeline)
    parser.print_help()
    return 0


def _run(parser, args):
    """Runs the script as __main__ (sys.argv and sys.path[0] as `python script.py` sets them),
    after flowstone.install_as_tensorflow()."""
    import flowstone
    if args.module is None and args.script is None:
        parser.error("give a script to run, or -m module")
    flowstone.install_as_tensorflow()
    if args.module is not None:
        rest = ([args.script] if args.script is not None else []) + args.args
        sys.argv = [args.module] + rest
        sys.path.insert(0, os.getcwd())
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        return 0
    if not os.path.exists(args.script):
        parser.error(f"can't open file '{args.script}': no such file")
    sys.argv = [args.script] + args.args
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    runpy.run_path(args.script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
