"""tf.flags (also tf.app.flags): the command-line flags TF1 programs define with DEFINE_*.

The subset of absl.flags that TF1 programs use, without depending on absl: DEFINE_string,
_integer, _float, _boolean / _bool, _enum, _list, _multi_string, _multi_integer, _multi_float,
FLAGS, and absl's parsing rules and messages (`--name=value` or `--name value`, `--flag` /
`--noflag` for booleans, one or two dashes, `--` ends the flags, flags may follow positional
arguments). As in TensorFlow, reading a flag parses sys.argv first when nothing has parsed the
command line yet.
"""

import os as _os
import sys as _sys

from flowstone.util.tf_export import export_value as _export_value


class Error(Exception):
    """A flag was defined or used wrongly."""


class IllegalFlagValueError(Error):
    """A flag got a value it cannot hold."""


class DuplicateFlagError(Error):
    """A flag name was defined twice."""


class UnrecognizedFlagError(Error):
    """The command line names a flag that was never defined."""

    def __init__(self, flagname, flagvalue=""):
        self.flagname = flagname
        self.flagvalue = flagvalue
        super().__init__(f"Unknown command line flag '{flagname}'")


class ValidationError(Error):
    """A flag validator rejected the flags' values."""


def _integer_help(lower, upper, noun):
    if lower == 0 and upper is None:
        return f"a non-negative {noun}"
    if lower == 1 and upper is None and noun == "integer":
        return "a positive integer"
    if upper == 0 and lower is None:
        return f"a non-positive {noun}"
    if lower is not None and upper is not None:
        return f"{'an' if noun == 'integer' else 'a'} {noun} in the range [{lower}, {upper}]"
    if lower is not None:
        return f"{'an' if noun == 'integer' else 'a'} {noun} >= {lower}"
    if upper is not None:
        return f"{'an' if noun == 'integer' else 'a'} {noun} <= {upper}"
    return f"{'an' if noun == 'integer' else 'a'} {noun}"


def _parse_int(text):
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    text = text.strip()
    lowered = text.lower().lstrip("+-")
    base = 16 if lowered.startswith("0x") else 8 if lowered.startswith("0o") else 10
    return int(text, base)


def _parse_bool(text):
    if isinstance(text, bool):
        return text
    if isinstance(text, int):
        if text in (0, 1):
            return bool(text)
    elif isinstance(text, str):
        lowered = text.lower()
        if lowered in ("true", "t", "1"):
            return True
        if lowered in ("false", "f", "0"):
            return False
    raise ValueError("Non-boolean argument to boolean flag")


class Flag:
    """One flag: its name, help, default and current value, and how text becomes a value."""

    def __init__(self, name, default, help_text, convert, kind, multi=False):
        self.name = name
        self.help = help_text
        self.kind = kind  # "string", "integer", "float", "bool", "enum", "list"
        self.multi = multi
        self.present = 0
        self.required = False
        self._convert = convert
        self.default = None if default is None else self._value_of(default)
        self.value = self.default

    def _value_of(self, argument):
        """The flag's value for `argument` (text or a Python value), or IllegalFlagValueError
        with absl's wording."""
        try:
            if self.multi:
                items = argument if isinstance(argument, (list, tuple)) else [argument]
                return [self._convert(item) for item in items]
            return self._convert(argument)
        except (TypeError, ValueError) as e:
            shown = ",".join(map(str, argument)) if isinstance(argument, list) else argument
            raise IllegalFlagValueError(f"flag --{self.name}={shown}: {e}") from None

    def parse(self, argument):
        """Sets the value from one command-line occurrence; a multi flag's first occurrence
        replaces its default and later ones append."""
        value = self._value_of(argument)
        if self.multi and self.present:
            self.value = self.value + value
        else:
            self.value = value
        self.present += 1


def _bounded(parse, lower, upper, noun):
    def convert(argument):
        value = parse(argument)
        if (lower is not None and value < lower) or (upper is not None and value > upper):
            raise ValueError(f"{value} is not {_integer_help(lower, upper, noun)}")
        return value
    return convert


def _enum(values):
    def convert(argument):
        if argument not in values:
            raise ValueError(f"value should be one of <{'|'.join(values)}>")
        return argument
    return convert


def _comma_list(argument):
    if isinstance(argument, (list, tuple)):
        return [str(item) for item in argument]
    return [item.strip() for item in argument.split(",")] if argument.strip() else []


class FlagValues:
    """The registry of defined flags. `FLAGS.name` reads a value (parsing sys.argv first when
    the command line has not been parsed), `FLAGS(argv)` parses and returns the arguments it did
    not consume."""

    def __init__(self):
        self.__dict__["_flags"] = {}
        self.__dict__["_defined_in"] = {}
        self.__dict__["_parsed"] = False

    # --- defining ---------------------------------------------------------------------------
    def _define(self, flag, module_name):
        existing = self._flags.get(flag.name)
        if existing is not None:
            raise DuplicateFlagError(
                f"The flag '{flag.name}' is defined twice. First from "
                f"{self._defined_in[flag.name]}, second from {module_name}. Description from "
                f"first occurrence: {existing.help}")
        self._flags[flag.name] = flag
        self._defined_in[flag.name] = module_name
        return flag

    # --- reading and writing ----------------------------------------------------------------
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if not self._parsed:
            self(_sys.argv)
        flag = self._flags.get(name)
        if flag is None:
            raise AttributeError(name)
        return flag.value

    def __setattr__(self, name, value):
        flag = self._flags.get(name)
        if flag is None:
            raise AttributeError(name)
        flag.value = None if value is None else flag._value_of(value)

    def __contains__(self, name):
        return name in self._flags

    def __getitem__(self, name):
        return self._flags[name]

    def __iter__(self):
        return iter(self._flags)

    def __len__(self):
        return len(self._flags)

    def flag_values_dict(self):
        return {name: flag.value for name, flag in self._flags.items()}

    def get_flag_value(self, name, default):
        flag = self._flags.get(name)
        return default if flag is None else flag.value

    def is_parsed(self):
        return self._parsed

    def mark_as_parsed(self):
        self.__dict__["_parsed"] = True

    def unparse_flags(self):
        """Back to the defaults, as if no command line had been parsed."""
        for flag in self._flags.values():
            flag.value = flag.default
            flag.present = 0
        self.__dict__["_parsed"] = False

    # --- parsing --------------------------------------------------------------------------------
    def __call__(self, argv, known_only=False):
        """Parses the flags in argv[1:]; returns [argv[0]] and the arguments left: positional
        ones, and with `known_only` the flags nobody defined."""
        if isinstance(argv, str) or not argv:
            raise TypeError("argv should be a tuple/list of strings, with the program name "
                            "first.")
        argv = list(argv)
        left = []
        unknown = []
        args = iter(argv[1:])
        for arg in args:
            if arg == "--":
                left.extend(args)
                break
            if not arg.startswith("-") or arg == "-":
                left.append(arg)
                continue
            name, has_value, value = arg.lstrip("-").partition("=")
            flag = self._flags.get(name)
            if flag is None and not has_value and name.startswith("no"):
                negated = self._flags.get(name[2:])
                if negated is not None and negated.kind == "bool":
                    negated.parse(False)
                    continue
            if flag is None:
                unknown.append(name)
                left.append(arg)
                continue
            if not has_value:
                if flag.kind == "bool":
                    value = "true"
                else:
                    value = next(args, None)
                    if value is None:
                        raise Error(f"Missing value for flag {arg}")
            flag.parse(value)
        if unknown and not known_only:
            raise UnrecognizedFlagError(unknown[0])
        for flag in self._flags.values():
            if flag.required and flag.value is None:
                raise IllegalFlagValueError(f"flag --{flag.name}=None: Flag --{flag.name} must "
                                            "have a value other than None.")
        self.mark_as_parsed()
        return argv[:1] + left

    def main_module_help(self):
        """One entry per flag: `--name: help` and its default."""
        lines = ["flags:"]
        for name in sorted(self._flags):
            flag = self._flags[name]
            default = flag.default
            if flag.kind in ("string", "enum") and default is not None:
                default = repr(default)
            elif flag.kind == "list" and default is not None:
                default = repr(",".join(default))
            lines.append(f"  --{'[no]' if flag.kind == 'bool' else ''}{name}: {flag.help}")
            lines.append(f"    (default: {'None' if default is None else default})")
        return "\n".join(lines)


FLAGS = FlagValues()


def _caller_module():
    """Where a flag was defined, as absl names it: the module, or the program for __main__."""
    module = _sys._getframe(2).f_globals.get("__name__", "?")
    if module == "__main__":
        return _os.path.basename(_sys.argv[0]) if _sys.argv and _sys.argv[0] else module
    return module


def _define(flag_values, flag, required):
    flag.required = required
    return flag_values._define(flag, _caller_module())


def DEFINE_string(name, default, help, flag_values=FLAGS,  # noqa: N802,A002
                  required=False, **args):
    return _define(flag_values, Flag(name, default, help, str, "string"), required)


def DEFINE_integer(name, default, help, lower_bound=None, upper_bound=None,  # noqa: N802,A002
                   flag_values=FLAGS, required=False, **args):
    convert = _bounded(_parse_int, lower_bound, upper_bound, "integer")
    return _define(flag_values, Flag(name, default, help, convert, "integer"), required)


def DEFINE_float(name, default, help, lower_bound=None, upper_bound=None,  # noqa: N802,A002
                 flag_values=FLAGS, required=False, **args):
    convert = _bounded(float, lower_bound, upper_bound, "number")
    return _define(flag_values, Flag(name, default, help, convert, "float"), required)


def DEFINE_boolean(name, default, help, flag_values=FLAGS, module_name=None,  # noqa: N802,A002
                   required=False, **args):
    return _define(flag_values, Flag(name, default, help, _parse_bool, "bool"), required)


DEFINE_bool = DEFINE_boolean


def DEFINE_enum(name, default, enum_values, help,  # noqa: N802,A002
                flag_values=FLAGS, module_name=None, required=False, **args):
    if not enum_values:
        raise ValueError(f"enum_values cannot be empty, found '{enum_values}'")
    return _define(flag_values, Flag(name, default, help, _enum(list(enum_values)), "enum"),
                   required)


def DEFINE_list(name, default, help, flag_values=FLAGS, required=False, **args):  # noqa: N802,A002
    return _define(flag_values, Flag(name, default, help, _comma_list, "list"), required)


def DEFINE_multi_string(name, default, help, flag_values=FLAGS,  # noqa: N802,A002
                        required=False, **args):
    return _define(flag_values, Flag(name, default, help, str, "string", multi=True), required)


def DEFINE_multi_integer(name, default, help, lower_bound=None, upper_bound=None,  # noqa: N802,A002
                         flag_values=FLAGS, required=False, **args):
    convert = _bounded(_parse_int, lower_bound, upper_bound, "integer")
    return _define(flag_values, Flag(name, default, help, convert, "integer", multi=True),
                   required)


def DEFINE_multi_float(name, default, help, lower_bound=None, upper_bound=None,  # noqa: N802,A002
                       flag_values=FLAGS, required=False, **args):
    convert = _bounded(float, lower_bound, upper_bound, "number")
    return _define(flag_values, Flag(name, default, help, convert, "float", multi=True),
                   required)


def mark_flag_as_required(flag_name, flag_values=FLAGS):
    """Parsing fails unless the flag ends with a value other than None."""
    flag_values[flag_name].required = True


def mark_flags_as_required(flag_names, flag_values=FLAGS):
    for flag_name in flag_names:
        mark_flag_as_required(flag_name, flag_values)


# tf.flags and tf.app.flags are this module.
_export_value("flags", _sys.modules[__name__])
_export_value("app.flags", _sys.modules[__name__])
