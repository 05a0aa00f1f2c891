"""tf.logging (TensorFlow's output format and levels), tf.flags / tf.app.flags (absl's parsing
rules and messages) and tf.app.run, each in a fresh interpreter where the program's process
state (handlers, sys.argv, exit status) matters."""

import subprocess
import sys
import textwrap

import pytest

import flowstone as tf
from flowstone.platform import flags as flags_module


def _run_program(source, *args):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(source), *args],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_logging_prints_tensorflows_lines_at_the_chosen_level():
    code, out, err = _run_program("""
        import flowstone as tf
        print(tf.logging.get_verbosity(), tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN,
              tf.logging.ERROR, tf.logging.FATAL)
        tf.logging.info("hidden at the default level")
        tf.logging.warn("w %s", "x")
        tf.logging.set_verbosity(tf.logging.INFO)
        print(tf.logging.get_verbosity())
        tf.logging.info("hello %d", 3)
        tf.logging.warning("warning")
        tf.logging.error("e")
        tf.logging.debug("debug hidden")
        for i in range(5):
            tf.logging.log_every_n(tf.logging.INFO, "every2 %d", 2, i)
        for i in range(5):
            tf.logging.log_first_n(tf.logging.INFO, "first2 %d", 2, i)
        tf.logging.log_if(tf.logging.INFO, "if %d", True, 1)
        tf.logging.log_if(tf.logging.INFO, "not shown", False)
        tf.logging.vlog(tf.logging.INFO, "vlog %d", 1)
        tf.logging.TaskLevelStatusMessage("status")
        tf.logging.fatal("fatal msg")
        tf.logging.flush()
        print("after fatal", tf.get_logger().name)
    """)
    assert code == 0, err
    assert out.splitlines() == ["30 10 20 30 40 50", "20", "after fatal tensorflow"]
    assert [line for line in err.splitlines() if "flowstone/gpu" not in line] == [
        "WARNING:tensorflow:w x", "INFO:tensorflow:hello 3", "WARNING:tensorflow:warning",
        "ERROR:tensorflow:e", "INFO:tensorflow:every2 0", "INFO:tensorflow:every2 2",
        "INFO:tensorflow:every2 4", "INFO:tensorflow:first2 0", "INFO:tensorflow:first2 1",
        "INFO:tensorflow:if 1", "INFO:tensorflow:vlog 1", "ERROR:tensorflow:status",
        "CRITICAL:tensorflow:fatal msg"]


def test_logging_leaves_a_program_with_its_own_handlers_alone():
    code, out, err = _run_program("""
        import logging, sys
        logging.basicConfig(stream=sys.stdout, format="%(name)s|%(message)s",
                            level=logging.INFO)
        import flowstone as tf
        tf.logging.info("through the root handler")
    """)
    assert code == 0, err
    assert out.splitlines() == ["tensorflow|through the root handler"]
    assert "through the root handler" not in err


@pytest.fixture
def flags():
    """A fresh registry in tf.flags' shape, so that tests do not share definitions."""
    values = flags_module.FlagValues()

    def define(kind, *args, **kwargs):
        return getattr(flags_module, f"DEFINE_{kind}")(*args, flag_values=values, **kwargs)

    define("float", "lr", 0.1, "learning rate")
    define("string", "name", "x", "a name")
    define("boolean", "debug", True, "debug mode")
    define("list", "layers", [], "layer sizes")
    define("multi_string", "m", None, "repeated")
    define("integer", "steps", 10, "steps", lower_bound=0)
    define("enum", "mode", "train", ["train", "eval"], "mode")
    return values, define


def test_flags_parse_absl_forms(flags):
    flags, define = flags
    left = flags(["prog", "--lr=0.5", "--name", "abc", "--nodebug", "--layers=1,2,3", "--m=a",
                  "-m=b", "pos1", "-steps", "7", "--", "--mode=eval"])
    assert left == ["prog", "pos1", "--mode=eval"]
    assert (flags.lr, flags.name, flags.debug, flags.layers, flags.m, flags.steps, flags.mode) == (
        0.5, "abc", False, ["1", "2", "3"], ["a", "b"], 7, "train")
    flags(["prog", "--debug"])
    assert flags.debug is True
    flags(["prog", "--debug=false"])
    assert flags.debug is False
    assert flags["steps"].default == 10 and flags["steps"].help == "steps"
    assert "steps" in flags and "nope" not in flags
    assert flags.flag_values_dict()["name"] == "abc"


def test_flag_errors_read_as_absl_writes_them(flags):
    flags, define = flags
    with pytest.raises(flags_module.UnrecognizedFlagError, match="Unknown command line flag 'zzz'"):
        flags(["prog", "--zzz=1"])
    assert flags(["prog", "--zzz=1", "--steps=3", "p"], known_only=True) == ["prog", "--zzz=1",
                                                                               "p"]
    cases = {"--steps=abc": "flag --steps=abc: invalid literal for int() with base 10: 'abc'",
             "--steps=-3": "flag --steps=-3: -3 is not a non-negative integer",
             "--mode=x": "flag --mode=x: value should be one of <train|eval>",
             "--debug=maybe": ("flag --debug=maybe: ('Non-boolean argument to boolean flag', "
                               "'maybe')")}
    for arg, message in cases.items():
        with pytest.raises(flags_module.IllegalFlagValueError) as info:
            flags(["prog", arg])
        assert str(info.value) == message
    with pytest.raises(flags_module.Error, match="Missing value for flag --steps"):
        flags(["prog", "--steps"])
    with pytest.raises(flags_module.DuplicateFlagError) as info:
        define("string", "name", "y", "again")
    assert str(info.value).startswith("The flag 'name' is defined twice. First from ")
    assert str(info.value).endswith("Description from first occurrence: a name")
    with pytest.raises(AttributeError, match="nope"):
        flags.nope
    with pytest.raises(flags_module.IllegalFlagValueError, match="-1 is not a non-negative"):
        flags.steps = -1
    flags.steps = 5
    assert flags.steps == 5
    with pytest.raises(flags_module.IllegalFlagValueError,
                       match="flag --bad=x: invalid literal for int"):
        define("integer", "bad", "x", "bad default")


def test_required_flags_and_multi_integers(flags):
    flags, define = flags
    define("multi_integer", "ids", [1], "ids")
    define("string", "out", None, "output")
    flags_module.mark_flag_as_required("out", flag_values=flags)
    with pytest.raises(flags_module.IllegalFlagValueError,
                       match="flag --out=None: Flag --out must have a value other than None."):
        flags(["prog"])
    flags(["prog", "--out=o", "--ids=3", "--ids=0x10"])
    assert flags.ids == [3, 16] and flags.out == "o"


def test_reading_a_flag_parses_sys_argv_first(monkeypatch, flags):
    """TensorFlow's FLAGS parse sys.argv on the first read; absl's own FlagValues raise."""
    flags, _ = flags
    with pytest.raises(flags_module.UnparsedFlagAccessError,
                       match="Trying to access flag --steps before flags were parsed"):
        flags.steps
    flags = flags_module._ParsingOnReadFlagValues(flags)
    monkeypatch.setattr(sys, "argv", ["prog", "--steps=42"])
    assert not flags.is_parsed()
    assert flags.steps == 42 and flags.is_parsed()
    flags.unparse_flags()
    monkeypatch.setattr(sys, "argv", ["prog", "--unknown=1"])
    with pytest.raises(flags_module.UnrecognizedFlagError):
        flags.steps


def test_validators_and_mutual_exclusion(flags, tmp_path):
    flags, define = flags
    flags_module.register_validator("steps", lambda value: value % 2 == 0,
                                    message="--steps must be even", flag_values=flags)
    with pytest.raises(flags_module.IllegalFlagValueError, match="--steps must be even"):
        flags(["prog", "--steps=3"])
    flags(["prog", "--steps=4"])
    assert flags.steps == 4

    @flags_module.multi_flags_validator(["lr", "steps"], flag_values=flags,
                                        message="lr*steps must stay below 10")
    def _small_product(values):
        return values["lr"] * values["steps"] < 10

    with pytest.raises(flags_module.IllegalFlagValueError, match="lr.steps must stay below 10"):
        flags(["prog", "--lr=5", "--steps=4"])
    define("string", "a", None, "a")
    define("string", "b", None, "b")
    flags_module.mark_flags_as_mutual_exclusive(["a", "b"], flag_values=flags)
    with pytest.raises(flags_module.IllegalFlagValueError, match=r"At most one of \(a, b\) must have a value"):
        flags(["prog", "--a=1", "--b=2", "--lr=0.1"])


def test_flagfile_enum_class_multi_enum_alias_and_holder(flags, tmp_path):
    import enum

    class Color(enum.Enum):
        RED = 1
        BLUE = 2

    flags, define = flags
    holder = define("enum_class", "color", "RED", Color, "a color")
    define("multi_enum", "modes", ["a"], ["a", "b", "c"], "modes")
    flags_module.DEFINE_alias("n", "name", flag_values=flags)
    flagfile = tmp_path / "run.flags"
    flagfile.write_text("--color=blue\n--modes=b\n--modes=c\n--n=from-file\n")
    flags(["prog", f"--flagfile={flagfile}"])
    assert holder.value is Color.BLUE and isinstance(holder, flags_module.FlagHolder)
    assert flags.modes == ["b", "c"] and flags.name == "from-file"
    with pytest.raises(flags_module.CantOpenFlagFileError):
        flags(["prog", f"--flagfile={tmp_path / 'missing.flags'}"])


def test_tf_one_zero_keyword_names_still_define_flags(caplog):
    values = flags_module.FlagValues()
    flags_module.DEFINE_integer(flag_name="k", default_value=3, docstring="old names",
                                flag_values=values)
    values(["prog"])
    assert values.k == 3 and values["k"].help == "old names"
    assert "keyword argument names (flag_name, default_value, docstring) is deprecated" in (
        caplog.text)


def test_tf_flags_has_absl_public_surface():
    from absl import flags as absl_flags
    public = absl_flags.__all__
    missing = [name for name in public if not hasattr(tf.flags, name)]
    assert not missing
    assert tf.flags.FlagValues is absl_flags.FlagValues


def test_tf_flags_and_app_flags_are_one_module():
    assert tf.app.flags is tf.flags
    assert tf.flags.FLAGS is tf.app.flags.FLAGS
    assert tf.flags.DEFINE_bool is tf.flags.DEFINE_boolean


APP_PROGRAM = """
    import sys
    import flowstone as tf
    tf.app.flags.DEFINE_integer("steps", 3, "how many steps", lower_bound=0)
    tf.flags.DEFINE_string("name", "net", "a name")
    FLAGS = tf.flags.FLAGS

    def main(argv):
        print("main", argv[1:], FLAGS.steps, FLAGS.name)
        return FLAGS.steps

    if __name__ == "__main__":
        tf.app.run()
"""


def test_app_run_parses_flags_calls_main_and_exits_with_its_value():
    code, out, err = _run_program(APP_PROGRAM, "--steps=4", "pos", "--other=1", "--name", "n")
    assert code == 4, err
    assert out.splitlines() == ["main ['pos', '--other=1'] 4 n"]


def test_app_run_reports_bad_flags_and_help():
    code, out, err = _run_program(APP_PROGRAM, "--steps=-1")
    assert code == 1
    assert "FATAL Flags parsing error: flag --steps=-1: -1 is not a non-negative integer" in err
    code, out, err = _run_program(APP_PROGRAM, "--help")
    assert code == 0
    assert "--steps: how many steps" in out and "(default: '3')" in out
    assert "(default: 'net')" in out


def test_app_run_with_main_and_argv_given():
    def main(argv):
        seen.append(argv)

    seen = []
    with pytest.raises(SystemExit) as info:
        tf.app.run(main=main, argv=["prog", "a", "b"])
    assert info.value.code is None and seen == [["prog", "a", "b"]]
