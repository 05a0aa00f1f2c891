"""flowstone-run: starts a Horovod job with Open MPI's mpirun, as horovodrun does.

    flowstone-run -np 4 python train.py
    flowstone-run -np 4 -H host1:2,host2:2 python train.py

Every process gets this environment's PATH, PYTHONPATH, LD_LIBRARY_PATH and the HOROVOD_*,
FLOWSTONE_* and TF_* variables; other machines need the same Python environment at the same
path and passwordless ssh from this one (mpirun starts the remote processes over ssh).
"""

import argparse
import os
import shutil
import sys

_FORWARDED_PREFIXES = ("HOROVOD_", "FLOWSTONE_", "TF_", "OMP_")
_FORWARDED = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV")


def mpirun_command(args, mpirun="mpirun", environ=None):
    """The mpirun command line for parsed flowstone-run arguments."""
    environ = os.environ if environ is None else environ
    cmd = [mpirun, "-np", str(args.num_proc), "--bind-to", "none", "--map-by", "slot"]
    if args.keep_survivors:
        # Without this, mpirun kills the job as soon as a rank dies (naming it); with it the
        # others go on and fail with an error naming the missing rank, within
        # FLOWSTONE_HOROVOD_TIMEOUT_SECONDS, but mpirun's exit status no longer says so.
        cmd += ["--mca", "orte_enable_recovery", "1"]
    if args.hosts:
        cmd += ["-H", args.hosts]
    if args.hostfile:
        cmd += ["--hostfile", args.hostfile]
    if not args.hosts and not args.hostfile:
        # On one machine, more processes than cores is fine (and usual in tests).
        cmd.append("--oversubscribe")
    if hasattr(os, "getuid") and os.getuid() == 0:
        cmd.append("--allow-run-as-root")
    for name in sorted(environ):
        if name in _FORWARDED or name.startswith(_FORWARDED_PREFIXES):
            cmd += ["-x", name]
    if args.verbose:
        cmd += ["--display-map"]
    return cmd + args.command


def _parser():
    p = argparse.ArgumentParser(
        prog="flowstone-run", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-np", "--num-proc", type=int, required=True, help="number of processes")
    p.add_argument("-H", "--hosts", help="host1:slots,host2:slots (default: this machine)")
    p.add_argument("--hostfile", help="an Open MPI host file")
    p.add_argument("--keep-survivors", action="store_true",
                   help="when a rank dies, let the others fail with an error naming it instead "
                        "of mpirun killing them (the exit status is then 0 even on failure)")
    p.add_argument("--verbose", action="store_true", help="print the mpirun command and map")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments")
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    if not args.command:
        _parser().error("give the command to run, e.g. `flowstone-run -np 2 python train.py`")
    if args.num_proc < 1:
        _parser().error("-np must be at least 1")
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        sys.stderr.write("flowstone-run: mpirun not found; install Open MPI (Debian/Ubuntu: "
                         "apt-get install openmpi-bin libopenmpi3)\n")
        return 127
    cmd = mpirun_command(args, mpirun)
    if args.verbose:
        sys.stderr.write(" ".join(cmd) + "\n")
    sys.stdout.flush()
    os.execv(mpirun, cmd)


if __name__ == "__main__":
    sys.exit(main())
