"""tf.contrib.training: HParams, and evaluating a checkpoint once (evaluate_once,
StopAfterNEvalsHook, get_or_create_eval_step). The queue-based input helpers are not provided."""

import json
import numbers
import re

from flowstone.train.evaluation import (StopAfterNEvalsHook, evaluate_once,  # noqa: F401
                                        get_or_create_eval_step)

# One assignment of HParams.parse: name=value or name=[v1, v2, ...], separated by commas.
_ASSIGNMENT = re.compile(r"(?P<name>[a-zA-Z][\w\.]*)\s*=\s*"
                         r"((?P<val>[^,\[]*)|\[(?P<vals>[^\]]*)\])($|,\s*)")


def _cast(name, param_type, value):
    """value as param_type, refusing the conversions TensorFlow refuses (str <-> number,
    bool <-> number, float -> int)."""
    if param_type is type(None):
        return value
    fail = f"Could not cast hparam '{name}' of type '{param_type}' from value {value!r}"
    if issubclass(param_type, (str, bytes)) != isinstance(value, (str, bytes)):
        raise ValueError(fail)
    if issubclass(param_type, bool) != isinstance(value, bool):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Integral) and not isinstance(value, numbers.Integral):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Number) and not isinstance(value, numbers.Number):
        raise ValueError(fail)
    return param_type(value)


def _parse_scalar(name, param_type, text):
    text = text.strip()
    if param_type is bool:
        lowered = text.lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise ValueError(f"Could not parse '{text}' as a bool for hparam '{name}'")
    if param_type is str or param_type is type(None):
        return text
    try:
        return param_type(text)
    except ValueError:
        raise ValueError(f"Could not parse hparam '{name}' of type '{param_type.__name__}' "
                         f"from '{text}'") from None


class HParams:
    """Named hyperparameters with fixed types: `HParams(learning_rate=0.1, layers=[64, 64])`,
    then `hparams.learning_rate`, `parse("learning_rate=0.3,layers=[32]")`,
    `override_from_dict`, `values()` and JSON."""

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        if hparam_def is not None:
            raise ValueError("HParams from an HParamDef proto is not provided by Flowstone")
        self._hparam_types = {}
        self._model_structure = model_structure
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name, value):
        """Adds hyperparameter `name`; its type is value's (its first element's for a list)."""
        if getattr(self, name, None) is not None:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"Multi-valued hyperparameters cannot be empty: {name}")
            self._hparam_types[name] = (type(value[0]), True)
        else:
            self._hparam_types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name, value):
        """Sets an existing hyperparameter, converting value to its type."""
        param_type, is_list = self._hparam_types[name]
        if isinstance(value, list):
            if not is_list:
                raise ValueError(f"Must not pass a list for single-valued parameter: {name}")
            setattr(self, name, [_cast(name, param_type, v) for v in value])
        else:
            if is_list:
                raise ValueError(f"Must pass a list for multi-valued parameter: {name}.")
            setattr(self, name, _cast(name, param_type, value))

    def del_hparam(self, name):
        if hasattr(self, name):
            delattr(self, name)
            del self._hparam_types[name]

    def parse(self, values):
        """Overrides hyperparameters from "name=value,name=[v1,v2]" (values parsed as each
        hyperparameter's type)."""
        parsed = {}
        position = 0
        while position < len(values):
            match = _ASSIGNMENT.match(values, position)
            if not match:
                raise ValueError(f"Malformed hyperparameter value: {values[position:]}")
            position = match.end()
            name = match.group("name")
            if name not in self._hparam_types:
                raise ValueError(f"Unknown hyperparameter type for {name}")
            if name in parsed:
                raise ValueError(f"Multiple assignments to variable '{name}' in {values}")
            param_type, is_list = self._hparam_types[name]
            if match.group("vals") is not None:
                if not is_list:
                    raise ValueError(f"Must not pass a list for single-valued parameter: "
                                     f"{name}")
                items = [v for v in match.group("vals").split(",") if v.strip()]
                parsed[name] = [_parse_scalar(name, param_type, v) for v in items]
            else:
                parsed[name] = _parse_scalar(name, param_type, match.group("val"))
        return self.override_from_dict(parsed)

    def override_from_dict(self, values_dict):
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def values(self):
        """{name: value} of every hyperparameter."""
        return {name: getattr(self, name) for name in self._hparam_types}

    def to_json(self, indent=None, separators=None, sort_keys=False):
        return json.dumps(self.values(), indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def parse_json(self, values_json):
        return self.override_from_dict(json.loads(values_json))

    def get(self, key, default=None):
        """The value of `key`, or `default` (which must have its type) when there is none."""
        if key not in self._hparam_types:
            return default
        if default is not None:
            param_type, is_list = self._hparam_types[key]
            if is_list != isinstance(default, (list, tuple)) or (
                    not is_list and not isinstance(default, param_type)
                    and not (param_type is float and isinstance(default, int))):
                raise ValueError(f"Hparam '{key}' of type '{param_type}' is incompatible with "
                                 f"default={default!r}")
        return getattr(self, key)

    def set_model_structure(self, model_structure):
        self._model_structure = model_structure

    def get_model_structure(self):
        return self._model_structure

    def __contains__(self, key):
        return key in self._hparam_types

    def __str__(self):
        return str(sorted(self.values().items()))

    def __repr__(self):
        return f"{type(self).__name__}({self})"
