"""Default names derived from class names, as TensorFlow derives them for layers, cells and
modules: BasicLSTMCell -> basic_lstm_cell."""

import re


def to_snake_case(name):
    """CamelCase to snake_case; a result starting with "_" gets a "private" prefix (TF's rule)."""
    words = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    snake = re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower()
    return snake if snake[0] != "_" else "private" + snake
