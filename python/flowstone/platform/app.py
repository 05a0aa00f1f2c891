"""tf.app.run: parses the command-line flags, then runs the program's main."""

import sys as _sys

from flowstone.platform import flags as _flags
from flowstone.util.tf_export import tf_export

_HELP_FLAGS = ("-?", "-h", "--help", "-help", "--helpshort", "--helpfull")


@tf_export("app.run")
def run(main=None, argv=None):
    """Parses the flags in `argv` (sys.argv by default), calls `main(remaining_argv)` and exits
    with its return value. Flags nobody defined stay in the arguments main receives, as in
    TensorFlow; a flag with a bad value prints absl's "FATAL Flags parsing error" and exits 1."""
    main = main or _sys.modules["__main__"].main
    argv = _sys.argv if argv is None else argv
    if any(arg in _HELP_FLAGS for arg in argv[1:]):
        print(f"\n{_flags.FLAGS.main_module_help()}")
        _sys.exit(0)
    try:
        remaining = _flags.FLAGS(argv, known_only=True)
    except _flags.Error as e:
        print(f"FATAL Flags parsing error: {e}", file=_sys.stderr)
        print("Pass --helpshort or --helpfull to see help on flags.", file=_sys.stderr)
        _sys.exit(1)
    _sys.exit(main(remaining))
