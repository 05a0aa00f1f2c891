"""AutoGraph inside tf.function: Python `if`/`while`/`for` on tensors become tf.cond and
tf.while_loop (the ops are checked in the traced graph), with values against numpy and real
TensorFlow running the same source."""

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow


def _op_types(function, *args):
    graph = function.get_concrete_function(*args).graph
    return {op.type for op in graph.get_operations()}


# Functions written once, run by Flowstone here and by TensorFlow in the peer.
PROGRAMS = '''
@tf.function
def branchy(x):
    s = tf.reduce_sum(x)
    if s > 10.0:
        y = x * 2.0
        label = 2
    elif s > 0.0:
        y = x + 1.0
        label = 1
    else:
        y = -x
        label = 0
    return y, label

@tf.function
def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps

@tf.function
def absolute(x):
    if x > 0.0:
        return x
    else:
        return -x

@tf.function
def skip_and_stop(n):
    total = 0
    for i in tf.range(n):
        if i % 3 == 0:
            continue
        if i > 10:
            break
        total += i
    return total

@tf.function
def logic(a, b):
    if a > 0 and not b < 0 or a == b:
        r = 1
    else:
        r = 0
    return r

@tf.function
def python_loops(x):
    for k in range(3):
        x = x + k
    return x, len(x)

def results():
    out = []
    for x in ([1.0, 2.0], [5.0, 7.0], [-1.0, -3.0]):
        y, label = branchy(tf.constant(x))
        out += y.numpy().tolist() + [int(label)]
    for n in (1, 6, 7, 27):
        out.append(int(collatz(tf.constant(n))))
    for v in (3.0, -2.0, 0.5):
        out.append(float(absolute(tf.constant(v))))
    for n in (0, 5, 20):
        out.append(int(skip_and_stop(tf.constant(n))))
    for a, b in ((1.0, 1.0), (1.0, -1.0), (-1.0, -1.0), (-1.0, 2.0)):
        out.append(int(logic(tf.constant(a), tf.constant(b))))
    y, n = python_loops(tf.constant([1.0, 2.0]))
    out += y.numpy().tolist() + [int(n)]
    return out
'''

EXPECTED = [2.0, 3.0, 1, 10.0, 14.0, 2, 1.0, 3.0, 0,
            0, 8, 16, 111,
            3.0, 2.0, 0.5,
            0, 7, 37,
            1, 0, 1, 0,
            4.0, 5.0, 2]


# Runs PROGRAMS as a module of its own whose source inspect can find (through linecache), as
# AutoGraph needs; the same lines run under TensorFlow.
LOADER = """
import linecache
linecache.cache["autograph_programs.py"] = (len(PROGRAMS), None, PROGRAMS.splitlines(True),
                                            "autograph_programs.py")
namespace = {"tf": tf}
exec(compile(PROGRAMS, "autograph_programs.py", "exec"), namespace)
"""


def test_programs_give_pythons_answers():
    namespace = {"tf": tf, "PROGRAMS": PROGRAMS}
    exec(LOADER, namespace)  # noqa: S102
    namespace = namespace["namespace"]
    np.testing.assert_allclose(namespace["results"](), EXPECTED)
    types = _op_types(namespace["collatz"], tf.constant(6))
    assert "While" in types or "StatelessWhile" in types
    assert {"If", "StatelessIf"} & _op_types(namespace["branchy"], tf.constant([1.0]))


@requires_tensorflow
def test_programs_match_tensorflow():
    printed = run_tensorflow(f"import tensorflow as tf\nPROGRAMS = {PROGRAMS!r}\n{LOADER}\n"
                             "print(namespace['results']())")
    theirs = eval(printed.strip().splitlines()[-1])  # noqa: S307 - our own printed list
    np.testing.assert_allclose(theirs, EXPECTED)


def test_if_on_a_tensor_builds_a_cond_and_python_if_stays_python():
    @tf.function
    def f(x, use_abs):
        if use_abs:  # a Python bool: no cond
            x = tf.abs(x)
        if tf.reduce_mean(x) > 1.0:
            x = x * 10.0
        return x

    np.testing.assert_allclose(f(tf.constant([-3.0, 1.0]), True), [30.0, 10.0])
    np.testing.assert_allclose(f(tf.constant([-3.0, 1.0]), False), [-3.0, 1.0])
    conds = [op for op in f.get_concrete_function(tf.constant([1.0]), True).graph
             .get_operations() if op.type in ("If", "StatelessIf")]
    assert len(conds) == 1


def test_variable_defined_in_one_branch_only_is_tensorflows_error():
    @tf.function
    def f(x):
        if x > 0:
            y = x
        return y

    with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
        f(tf.constant(1.0))


def test_branches_with_different_dtypes_name_the_variable():
    @tf.function
    def f(x):
        if x > 0:
            y = 1
        else:
            y = 1.5
        return y

    with pytest.raises(TypeError, match="'y' has dtype int32 in the main branch, but dtype "
                                        "float32 in the else branch"):
        f(tf.constant(1.0))


def test_nested_ifs_inside_a_tensor_loop():
    @tf.function
    def f(x):
        pos = 0.0
        neg = 0.0
        for v in x:
            if v > 0:
                if v > 10:
                    pos += 10.0
                else:
                    pos += v
            else:
                neg += v
        return pos, neg

    pos, neg = f(tf.constant([1.0, 20.0, -2.0, 3.0, -4.0]))
    assert float(pos) == 14.0 and float(neg) == -6.0


def test_loop_variable_whose_shape_changes_gets_tensorflows_message():
    @tf.function
    def f(n):
        x = tf.zeros([1])
        for _ in tf.range(n):
            x = tf.concat([x, x], 0)
        return x

    with pytest.raises(ValueError, match=r"'x' has shape \(1,\) before the loop, but shape "
                                         r"\(2,\) after one iteration. Use "
                                         "tf.autograph.experimental.set_loop_options"):
        f(tf.constant(3))


def test_loop_variable_whose_dtype_changes_gets_tensorflows_message():
    @tf.function
    def f(n):
        x = 0
        for _ in tf.range(n):
            x = tf.cast(x, tf.float32) + 0.5
        return x

    with pytest.raises(TypeError, match="'x' has dtype int32 before the loop, but dtype "
                                        "float32 after one iteration"):
        f(tf.constant(3))


def test_set_loop_options_shape_invariants_let_a_shape_grow():
    @tf.function
    def f(n):
        x = tf.zeros([1])
        for _ in tf.range(n):
            tf.autograph.experimental.set_loop_options(
                shape_invariants=[(x, tf.TensorShape([None]))])
            x = tf.concat([x, x], 0)
        return x

    assert f(tf.constant(3)).shape == (8,)


def test_while_with_break_and_a_tensor_condition():
    @tf.function
    def f(x):
        i = 0
        while i < 100:
            if x[i] < 0:
                break
            i += 1
        return i

    assert int(f(tf.constant([3.0, 1.0, -2.0, 5.0]))) == 2


def test_return_inside_a_tensor_if_and_elif():
    # TensorFlow's AutoGraph refuses this one ("the else branch must also have a return
    # statement"): Flowstone's moves the statements after an `if` whose branch returns into its
    # other branch.
    @tf.function
    def sign(x):
        if x > 0:
            return 1.0
        elif x < 0:
            return -1.0
        return 0.0

    assert [float(sign(tf.constant(v))) for v in (3.0, -2.0, 0.0)] == [1.0, -1.0, 0.0]


def test_return_inside_a_tensor_loop():
    # TensorFlow's AutoGraph refuses this one ("a return statement cannot be placed inside this
    # TensorFlow loop"); Flowstone's gives the loop's return value a type by tracing it once.
    @tf.function
    def first_above(x, limit):
        for v in x:
            if v > limit:
                return v
        return -1.0

    x = tf.constant([0.0, 1.0, 3.0, 2.0])
    assert [float(first_above(x, tf.constant(v))) for v in (0.5, 2.5, 9.0)] == [1.0, 3.0, -1.0]


def test_a_list_appended_in_a_tensor_loop_becomes_a_tensor_array():
    # TensorFlow's AutoGraph does this only with Feature.LISTS; by default it fails ("out of
    # scope"). Flowstone's always does it.
    @tf.function
    def squares(n):
        out = []
        for i in tf.range(n):
            out.append(i * i)
        return tf.stack(out), len(out)

    values, count = squares(tf.constant(5))
    assert values.numpy().tolist() == [0, 1, 4, 9, 16] and int(count) == 5


def test_a_python_loop_appending_keeps_a_python_list():
    @tf.function
    def f(x):
        parts = []
        for k in range(3):
            parts.append(x * k)
        return tf.stack(parts)

    np.testing.assert_allclose(f(tf.constant([1.0, 2.0])), [[0, 0], [1, 2], [2, 4]])


def test_for_over_a_dataset_inside_tf_function():
    @tf.function
    def total(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        return s

    assert int(total(tf.data.Dataset.range(5))) == 10


def test_print_of_a_tensor_prints_when_the_function_runs(capfd):
    @tf.function
    def f(x):
        print("value:", x)
        return x + 1

    f(tf.constant([1.0, 2.0]))
    f(tf.constant([3.0, 4.0]))
    out = capfd.readouterr().out
    assert "value: [1. 2.]" in out and "value: [3. 4.]" in out


def test_called_user_functions_are_converted_too():
    def clip(v):
        if v > 1.0:
            v = tf.constant(1.0)
        return v

    @tf.function
    def f(x):
        return clip(x) * 2.0

    assert float(f(tf.constant(5.0))) == 2.0 and float(f(tf.constant(0.25))) == 0.5


def test_autograph_false_and_do_not_convert_keep_python_semantics():
    def g(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TypeError, match="Python `bool`"):
        tf.function(g, autograph=False)(tf.constant(1.0))
    with pytest.raises(TypeError, match="Python `bool`"):
        tf.function(tf.autograph.experimental.do_not_convert(g))(tf.constant(1.0))
    assert float(tf.function(g)(tf.constant(-2.0))) == 2.0


def test_errors_point_at_the_users_line():
    @tf.function
    def f(x):
        y = x
        if tf.reduce_sum(x) > 0:
            y = tf.reshape(x, [7])  # the failing line
        return y

    with pytest.raises(Exception) as info:
        f(tf.constant([1.0, 2.0]))
    import inspect
    lines, start = inspect.getsourcelines(f.python_function)
    failing = start + next(i for i, l in enumerate(lines) if "the failing line" in l)
    frames = [(t.tb_frame.f_code.co_filename, t.tb_lineno) for t in _walk(info.tb)]
    assert (__file__, failing) in frames


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_conversion_happens_once_per_function(monkeypatch):
    from flowstone.autograph import conversion
    calls = []
    real = conversion._compile
    monkeypatch.setattr(conversion, "_compile", lambda f: calls.append(f) or real(f))

    @tf.function
    def f(x):
        if x > 0:
            x = x - 1
        return x

    for v in (1.0, 2.0, 3.0):
        f(tf.constant(v))
    f(tf.constant([[1.0]]))  # a new trace, the same conversion
    assert len(calls) == 1 and f.experimental_get_tracing_count() == 2


def test_keras_model_with_training_flag_and_tensor_if_fits():
    class Gate(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(1)

        def call(self, x, training=False):
            y = self.dense(x)
            if training:
                y = y * 1.0
            if tf.reduce_sum(x) > 0:
                y = y + 1.0
            else:
                y = y - 1.0
            return y

    model = Gate()
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((8, 2), np.float32)
    history = model.fit(x, np.zeros((8, 1), np.float32), epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    out = tf.function(lambda v: model(v))(tf.constant(-x))
    np.testing.assert_allclose(out, model.dense(tf.constant(-x)) - 1.0, rtol=1e-6)


def test_branches_and_loops_with_only_side_effects():
    counter = tf.Variable(0)

    @tf.function
    def f(x, n):
        if x > 0:
            counter.assign_add(10)
        for _ in tf.range(n):
            counter.assign_add(1)
        return x

    f(tf.constant(1.0), tf.constant(3))
    assert int(counter.numpy()) == 13
    f(tf.constant(-1.0), tf.constant(2))
    assert int(counter.numpy()) == 15


def test_a_while_loop_on_a_variable_with_no_loop_variables():
    counter = tf.Variable(0)

    @tf.function
    def count_to(n):
        while counter < n:
            counter.assign_add(1)
        return counter.read_value()

    assert int(count_to(tf.constant(4))) == 4 and int(counter.numpy()) == 4


def test_a_tensor_array_through_a_tensor_if():
    @tf.function
    def f(x):
        ta = tf.TensorArray(tf.float32, size=2)
        if x > 0:
            ta = ta.write(0, x).write(1, x * 2.0)
        else:
            ta = ta.write(0, -x).write(1, -x * 2.0)
        return ta.stack()

    np.testing.assert_allclose(f(tf.constant(2.0)), [2.0, 4.0])
    np.testing.assert_allclose(f(tf.constant(-1.0)), [1.0, 2.0])


ERRORS = '''
@tf.function
def grows(n):
    x = tf.zeros([1])
    for _ in tf.range(n):
        x = tf.concat([x, x], 0)
    return x

@tf.function
def one_branch(x):
    if x > 0:
        y = x
    return y

@tf.function
def changes_dtype(n):
    x = 0
    for _ in tf.range(n):
        x = tf.cast(x, tf.float32) + 0.5
    return x

def messages():
    out = []
    for function, arg in ((grows, tf.constant(3)), (one_branch, tf.constant(1.0)),
                          (changes_dtype, tf.constant(3))):
        try:
            function(arg)
        except Exception as e:  # the message's last line is AutoGraph's own
            line = str(e).strip().splitlines()[-1].strip()
            prefix = type(e).__name__ + ": "  # TensorFlow's "in user code:" report repeats it
            out.append((type(e).__name__, line[len(prefix):] if line.startswith(prefix)
                        else line))
    return out
'''


def _load(source, name):
    import linecache
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    namespace = {"tf": tf}
    exec(compile(source, name, "exec"), namespace)  # noqa: S102
    return namespace


@requires_tensorflow
def test_error_messages_match_tensorflows():
    ours = _load(ERRORS, "autograph_errors.py")["messages"]()
    printed = run_tensorflow(f"import tensorflow as tf\nPROGRAMS = {ERRORS!r}\n"
                             + LOADER.replace("autograph_programs", "autograph_errors")
                             + "\nprint(namespace['messages']())")
    theirs = eval(printed.strip().splitlines()[-1])  # noqa: S307 - our own printed list
    assert [tuple(m) for m in ours] == [tuple(m) for m in theirs]


def test_a_tensor_break_in_a_python_loop_guards_the_remaining_iterations():
    @tf.function
    def f(x):
        total = 0.0
        for k in range(5):
            if total > x:
                break
            total += float(k)
        return total

    assert [float(f(tf.constant(v))) for v in (2.5, 100.0)] == [3.0, 10.0]
