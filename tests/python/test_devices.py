"""Devices: device names through tf.device, placement with and without soft placement,
colocation, two logical CPUs in one graph, the placement log and tf.config's device state."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

# These scenarios describe a machine without a GPU (exact device lists and placements);
# tests/gpu and test_gpu_fake.py cover placement with GPUs.
pytestmark = pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")),
                                reason="this machine has a GPU; the scenarios here have none")

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
TWO_CPUS = tf.ConfigProto(device_count={"CPU": 2})


def placements(log):
    """{op name: device} from a log_device_placement log, checking its format on the way."""
    assert log.count("Device mapping:") == 1, log
    found = {}
    for line in log.splitlines():
        m = re.fullmatch(r"(\S+): \((\w+)\): (/job:localhost/replica:0/task:0/device:\w+:\d+)",
                         line)
        if m:
            found[m.group(1)] = m.group(3)
    return found


def run_logged(fetches, capfd, config=None, feed_dict=None, setup=None):
    """Runs `fetches` in a fresh session with log_device_placement; returns (values, placements)."""
    config = config or tf.ConfigProto()
    config.log_device_placement = True
    capfd.readouterr()
    with tf.Session(config=config) as sess:
        if setup is not None:
            sess.run(setup)
        values = sess.run(fetches, feed_dict)
    return values, placements(capfd.readouterr().err)


def run_program(code):
    """Runs `code` in a fresh interpreter (for process-wide device settings)."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


# --- device names --------------------------------------------------------------------------


@pytest.mark.parametrize("spec, expected", [
    (CPU0, CPU0),
    ("/cpu:0", "/device:CPU:0"),
    ("/CPU:1", "/device:CPU:1"),
    ("/gpu:1", "/device:GPU:1"),
    ("/device:CPU:0", "/device:CPU:0"),
    ("/device:gpu:0", "/device:GPU:0"),
    ("device:CPU:0", "/device:CPU:0"),
    ("/job:localhost", "/job:localhost"),
    ("/replica:0/task:0", "/replica:0/task:0"),
    ("/device:CPU:*", "/device:CPU:*"),
    ("/cpu", "/device:CPU:*"),
    ("", ""),
])
def test_device_names_full_short_and_partial(spec, expected):
    with tf.device(spec):
        a = tf.constant(1.0)
    assert a.device == expected
    assert a.op.device == expected


def test_nested_device_scopes_merge_field_by_field():
    with tf.device("/job:localhost"):
        with tf.device("/replica:0/task:0"):
            with tf.device("/device:CPU:*"):
                a = tf.constant(1.0)
                with tf.device("/cpu:1"):
                    b = tf.constant(1.0)
            with tf.device("/gpu:1"):
                with tf.device("/device:CPU"):
                    c = tf.constant(1.0)  # a new type does not inherit the outer id
                with tf.device("/job:localhost"):
                    d = tf.constant(1.0)
    assert a.device == "/job:localhost/replica:0/task:0/device:CPU:*"
    assert b.device == "/job:localhost/replica:0/task:0/device:CPU:1"
    assert c.device == "/job:localhost/replica:0/task:0/device:CPU:*"
    assert d.device == "/job:localhost/replica:0/task:0/device:GPU:1"


def test_device_none_clears_the_enclosing_scopes():
    with tf.device("/job:localhost/cpu:1"):
        with tf.device(None):
            a = tf.constant(1.0)
            with tf.device("/cpu:0"):
                b = tf.constant(1.0)
        c = tf.constant(1.0)
    assert a.device == ""
    assert b.device == "/device:CPU:0"
    assert c.device == "/job:localhost/device:CPU:1"


def test_device_functions_see_the_op_and_merge():
    seen = []

    def matmuls_on_cpu1(op):
        seen.append((op.type, op.name, op.device))
        return "/cpu:1" if op.type == "MatMul" else None

    x = tf.constant(np.eye(2, dtype=np.float32), name="x")
    with tf.device("/job:localhost"), tf.device(matmuls_on_cpu1):
        y = tf.matmul(x, x, name="mm")
        z = tf.add(y, 1.0, name="z")
    assert y.device == "/job:localhost/device:CPU:1"
    assert z.device == "/job:localhost"
    # As in TensorFlow, a function sees the device of the scopes inside it (none here); the
    # scopes outside it fill in what it leaves unset afterwards.
    assert ("MatMul", "mm", "") in seen
    with tf.Session(config=TWO_CPUS) as sess:
        np.testing.assert_allclose(sess.run(z), np.eye(2) + 1)


def test_device_functions_get_the_operation_and_its_node_def():
    seen = []

    def variables_on_cpu1(op):
        seen.append((type(op), op.type, op.name, op.node_def.op, op.node_def.name,
                     op.node_def.device))
        return "/cpu:1" if op.node_def.op == "VarHandleOp" else op.device

    with tf.device(variables_on_cpu1):
        w = tf.Variable(np.ones([2], np.float32), name="w")
        with tf.device("/cpu:0"):
            y = tf.multiply(w, 3.0, name="y")
    assert w.op.device == "/device:CPU:1" and y.device == "/device:CPU:0"
    assert (tf.Operation, "VarHandleOp", "w", "VarHandleOp", "w", "") in seen
    # The scope inside the function applies first, so the function sees its device.
    assert (tf.Operation, "Mul", "y", "Mul", "y", "/device:CPU:0") in seen
    node_def = y.op.node_def
    assert node_def.input == [y.op.inputs[0].op.name, y.op.inputs[1].op.name]
    assert node_def.attr["T"] == tf.float32 and "T" in str(node_def)
    with tf.Session(config=TWO_CPUS) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), [3.0, 3.0])


def test_nested_device_functions_apply_innermost_first():
    calls = []

    def outer(op):
        calls.append(("outer", op.device))
        return "/job:localhost"

    def inner(op):
        calls.append(("inner", op.device))
        return "/cpu:1"

    x = tf.constant(1.0, name="x")
    calls.clear()
    with tf.device(outer), tf.device(inner):
        z = tf.add(x, x, name="z")
    # The outer function's result replaces the inner one's, as in TensorFlow.
    assert calls == [("inner", ""), ("outer", "/device:CPU:1")]
    assert z.device == "/job:localhost"
    with tf.device("/cpu:1"), tf.device(lambda op: ""):
        q = tf.add(x, x, name="q")
    assert q.device == "/device:CPU:1"


@pytest.mark.parametrize("spec", ["/gpu:zero", "/device:GPU:0:1", "/job:", "/tpu:0",
                                  "/task:-1", "cpu0", "/replica:x"])
def test_malformed_device_names_show_the_grammar(spec):
    with pytest.raises(ValueError) as info:
        with tf.device(spec):
            pass
    message = str(info.value)
    assert f"'{spec}'" in message
    assert "/job:<name>/replica:<int>/task:<int>/device:<TYPE>:<id>" in message


def test_device_rejects_other_types():
    with pytest.raises(TypeError, match="tf.device expects a string"):
        with tf.device(0):
            pass


# --- two logical CPUs ------------------------------------------------------------------------


def build_two_cpu_graph():
    """Dataflow crossing /cpu:0 -> /cpu:1 -> /cpu:0, and a variable on /cpu:1 updated from an op
    on /cpu:0. Returns the tensors and the numpy results of the first run."""
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.device("/cpu:0"):
        a = tf.constant(m, name="a")
        b = tf.matmul(a, a, transpose_b=True, name="mm0")
    with tf.device("/cpu:1"):
        c = tf.add(b, 1.0, name="add1")
        v = tf.Variable(np.ones((2, 2), np.float32), name="v")
    with tf.device("/cpu:0"):
        d = tf.multiply(c, 2.0, name="mul0")
        update = v.assign_add(d, read_value=False, name="update0")
    with tf.control_dependencies([update]):
        after = v.read_value()
    expected_d = ((m @ m.T) + 1.0) * 2.0
    return (d, after), (expected_d, 1.0 + expected_d), v.initializer


def test_two_cpus_from_device_count(capfd):
    fetches, expected, init = build_two_cpu_graph()
    (d, after), logged = run_logged(fetches, capfd, config=tf.ConfigProto(
        device_count={"CPU": 2}), setup=init)
    np.testing.assert_allclose(d, expected[0])
    np.testing.assert_allclose(after, expected[1])
    assert logged["a"] == CPU0
    assert logged["mm0"] == CPU0
    assert logged["add1"] == CPU1
    assert logged["mul0"] == CPU0
    assert logged["v"] == CPU1
    assert logged["v/Assign"] == CPU1
    assert logged["update0"] == CPU0


def test_two_cpus_list_devices_and_log_header(capfd):
    tf.constant(1.0, name="one")
    config = tf.ConfigProto(device_count={"CPU": 2}, log_device_placement=True)
    capfd.readouterr()
    with tf.Session(config=config) as sess:
        assert [d.name for d in sess.list_devices()] == [CPU0, CPU1]
        sess.run(tf.get_default_graph().get_tensor_by_name("one:0"))
    err = capfd.readouterr().err
    lines = err.splitlines()
    start = lines.index("Device mapping:")
    assert lines[start + 1] == f"{CPU0} -> device: 0, name: CPU"
    assert lines[start + 2] == f"{CPU1} -> device: 1, name: CPU"
    assert f"one: (Const): {CPU0}" in lines[start + 3:]


def test_pin_to_cpu1_without_a_second_cpu_fails():
    with tf.device("/cpu:1"):
        a = tf.constant(1.0, name="on_cpu1")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(a)
    message = str(info.value)
    assert "Cannot assign a device for operation on_cpu1" in message
    assert "/device:CPU:1" in message
    assert f"available devices are [ {CPU0} ]" in message


def test_two_cpus_from_logical_device_configuration():
    proc = run_program("""
        import numpy as np
        import flowstone as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        print([d.name for d in tf.config.list_logical_devices("CPU")])
        m = np.arange(4, dtype=np.float32).reshape(2, 2)
        with tf.device("/cpu:1"):
            a = tf.constant(m, name="a")
            v = tf.Variable(np.zeros((2, 2), np.float32), name="v")
        with tf.device("/cpu:0"):
            b = tf.matmul(a, a, name="mm0")
            update = v.assign_add(b, read_value=False, name="update0")
        with tf.device("/cpu:1"):
            c = tf.subtract(b, a, name="sub1")
        config = tf.ConfigProto(log_device_placement=True)
        with tf.Session(config=config) as sess:
            print([d.name for d in sess.list_devices()])
            sess.run(v.initializer)
            sess.run(update)
            out_c, out_v = sess.run([c, v])
        np.testing.assert_allclose(out_c, m @ m - m)
        np.testing.assert_allclose(out_v, m @ m)
        print("ok")
    """)
    lines = proc.stdout.splitlines()
    assert lines[0] == str([CPU0, CPU1])
    assert lines[1] == str([CPU0, CPU1])
    assert lines[2] == "ok"
    logged = placements(proc.stderr)
    assert logged["a"] == CPU1
    assert logged["v"] == CPU1
    assert logged["mm0"] == CPU0
    assert logged["update0"] == CPU0
    assert logged["sub1"] == CPU1


# --- soft placement ----------------------------------------------------------------------------


def build_unsatisfiable_pins():
    with tf.device("/gpu:0"):
        a = tf.constant([1.0, 2.0], name="on_gpu")
    with tf.device("/cpu:5"):
        b = tf.multiply(a, 3.0, name="on_cpu5")
    return b


def test_soft_placement_falls_back_to_cpu0(capfd):
    b = build_unsatisfiable_pins()
    value, logged = run_logged(b, capfd, config=tf.ConfigProto(allow_soft_placement=True))
    np.testing.assert_allclose(value, [3.0, 6.0])
    assert logged["on_gpu"] == CPU0
    assert logged["on_cpu5"] == CPU0


def test_missing_gpu_without_soft_placement_names_op_devices_and_fix():
    b = build_unsatisfiable_pins()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(b)
    message = str(info.value)
    assert "Cannot assign a device for operation on_gpu" in message
    assert "was explicitly assigned to /device:GPU:0" in message
    assert f"available devices are [ {CPU0} ]" in message
    assert "no GPU is available" in message
    assert "allow_soft_placement=True" in message
    assert "tf.device" in message


def test_missing_cpu_without_soft_placement_names_op_devices_and_fix():
    with tf.device("/cpu:5"):
        b = tf.constant(1.0, name="on_cpu5")
    with tf.Session(config=TWO_CPUS) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(b)
    message = str(info.value)
    assert "Cannot assign a device for operation on_cpu5" in message
    assert "was explicitly assigned to /device:CPU:5" in message
    assert f"available devices are [ {CPU0}, {CPU1} ]" in message
    assert "allow_soft_placement=True" in message


# --- colocation --------------------------------------------------------------------------------


def test_colocate_with_sets_class_attr_and_device():
    with tf.device("/cpu:1"):
        a = tf.constant(1.0, name="a")
    with tf.device("/cpu:0"):
        with tf.colocate_with(a):
            b = tf.add(a, 1.0, name="b")  # outer device scopes do not apply inside
            with tf.colocate_with(b.op):
                c = tf.identity(b, name="c")  # b's group is a's group
    assert b.op.get_attr("_class") == ["loc:@a"]
    assert b.device == "/device:CPU:1"
    assert c.op.get_attr("_class") == ["loc:@a"]
    assert b.op.colocation_groups() == ["loc:@a"]
    assert a.op.colocation_groups() == ["loc:@a"]
    with pytest.raises(ValueError, match="no attr named '_class'"):
        a.op.get_attr("_class")


def test_unpinned_op_follows_the_op_it_is_colocated_with(capfd):
    with tf.device("/cpu:1"):
        v = tf.Variable(2.0, name="v")
    read = v.read_value()  # unpinned: placed with the variable it reads
    with tf.colocate_with(read.op):
        y = tf.multiply(read, 3.0, name="y")
    z = tf.multiply(read, 4.0, name="z")
    assert read.op.device == "" and y.device == ""
    assert y.op.get_attr("_class") == [f"loc:@{read.op.name}"]
    (y_value, z_value), logged = run_logged([y, z], capfd, config=TWO_CPUS,
                                            setup=v.initializer)
    assert (y_value, z_value) == (6.0, 8.0)
    assert logged[read.op.name] == CPU1
    assert logged["y"] == CPU1
    assert logged["z"] == CPU0


def test_colocation_target_created_later_is_placed_first(capfd):
    with tf.device("/cpu:1"):
        w = tf.get_variable("w", shape=[3], initializer=tf.ones_initializer())
    init_ops = [op for op in tf.get_default_graph().get_operations()
                if op.name.startswith("w/Initializer/")]
    assert init_ops
    for op in init_ops:
        assert op.device == ""
        assert op.get_attr("_class") == ["loc:@w"]
    value, logged = run_logged(w.read_value(), capfd, config=TWO_CPUS, setup=w.initializer)
    np.testing.assert_allclose(value, np.ones(3))
    for op in init_ops:
        assert logged[op.name] == CPU1, op.name


def test_colocate_with_a_variable(capfd):
    with tf.device("/cpu:1"):
        v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")
    x = tf.constant([10.0, 20.0], name="x")
    with tf.colocate_with(v):
        s = tf.add(x, 1.0, name="s")
    assert s.op.get_attr("_class") == ["loc:@v"]
    assert s.device == v.device == "/device:CPU:1"
    value, logged = run_logged(s, capfd, config=TWO_CPUS)
    np.testing.assert_allclose(value, [11.0, 21.0])
    assert logged["s"] == CPU1


def test_variable_ops_are_colocated_with_the_variable(capfd):
    with tf.device("/cpu:1"):
        v = tf.Variable(np.zeros(3, np.float32), name="v")
    # Created outside the device scope: readers and writers still go to the variable's device.
    assign = v.assign([1.0, 2.0, 3.0], name="assign_outside", read_value=False)
    with tf.control_dependencies([assign]):
        read = v.read_value()
    doubled = tf.multiply(read, 2.0, name="doubled")
    assert assign.device == read.op.device == ""
    value, logged = run_logged(doubled, capfd, config=TWO_CPUS, setup=v.initializer)
    np.testing.assert_allclose(value, [2.0, 4.0, 6.0])
    for name in ["v", "v/Assign", "assign_outside", read.op.name]:
        assert logged[name] == CPU1, name
    assert logged["doubled"] == CPU0


def test_optimizer_slots_are_colocated_with_their_variable(capfd):
    with tf.device("/cpu:1"):
        w = tf.Variable(np.array([1.0, -2.0], np.float32), name="w")
    loss = tf.reduce_sum(tf.square(w))
    train = tf.train.AdamOptimizer(0.1).minimize(loss)
    _, logged = run_logged(train, capfd, config=TWO_CPUS,
                           setup=tf.global_variables_initializer())
    assert logged["w/Adam"] == CPU1
    assert logged["w/Adam_1"] == CPU1


def test_pin_conflicting_with_colocation_is_an_error():
    with tf.device("/cpu:1"):
        a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        with tf.device("/cpu:0"):
            b = tf.negative(a, name="b")
    assert b.device == "/device:CPU:0"
    with tf.Session(config=TWO_CPUS) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(b)
    message = str(info.value)
    assert "Cannot colocate nodes {{colocation_node b}} and {{colocation_node a}}" in message
    assert "b is pinned to '/device:CPU:0'" in message
    assert f"a, which it is colocated with, is on {CPU1}" in message
    assert "allow_soft_placement=True" in message
    assert "tf.colocate_with" in message


def test_soft_placement_keeps_a_conflicting_colocation_together(capfd):
    with tf.device("/cpu:1"):
        a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        with tf.device("/cpu:0"):
            b = tf.negative(a, name="b")
    config = tf.ConfigProto(device_count={"CPU": 2}, allow_soft_placement=True)
    value, logged = run_logged(b, capfd, config=config)
    assert value == -1.0
    assert logged["b"] == CPU1


def test_ignore_existing_replaces_the_outer_colocations(capfd):
    with tf.device("/cpu:1"):
        a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    with tf.colocate_with(a):
        with tf.colocate_with(b.op, ignore_existing=True):
            c = tf.identity(b, name="c")
        with tf.colocate_with(b.op):
            d = tf.add(a, b, name="d")
        with tf.colocate_with(None, ignore_existing=True):
            e = tf.identity(a, name="e")
    assert c.op.get_attr("_class") == ["loc:@b"]
    assert c.device == ""
    assert d.op.get_attr("_class") == ["loc:@a", "loc:@b"]
    assert "_class" not in e.op._node.attr_names()
    assert e.device == ""
    (c_value, e_value), logged = run_logged([c, e], capfd, config=TWO_CPUS)
    assert (c_value, e_value) == (2.0, 1.0)
    assert logged["c"] == CPU0
    assert logged["e"] == CPU0
    with tf.Session(config=TWO_CPUS) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"colocated with both a on .*CPU:1 and b on .*CPU:0"):
            sess.run(d)


def test_colocate_with_none_needs_ignore_existing():
    with pytest.raises(ValueError, match="ignore_existing is not True"):
        with tf.colocate_with(None):
            pass


def test_class_attr_survives_the_graph_dump():
    a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        tf.identity(a, name="b")
    with tf.Session() as sess:
        graph_def = sess.graph_def
    b = next(node for node in graph_def.node if node.name == "b")
    assert list(b.attr["_class"].list.s) == [b"loc:@a"]


# --- tf.config ---------------------------------------------------------------------------------


def test_set_visible_devices_after_a_session_started_raises():
    proc = run_program("""
        import flowstone as tf

        cpus = tf.config.list_physical_devices("CPU")
        tf.config.set_visible_devices(cpus, "CPU")  # allowed before any session
        cpu = cpus[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        print(len(tf.config.list_logical_devices("CPU")))
        with tf.Session() as sess:
            sess.run(tf.constant(1.0))
        tf.config.set_visible_devices(cpus, "CPU")  # unchanged: allowed, as in TensorFlow
        try:
            tf.config.set_visible_devices([], "CPU")
        except RuntimeError as e:
            print("RuntimeError:", e)
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
        except RuntimeError as e:
            print("RuntimeError:", e)
        print(len(tf.config.list_logical_devices("CPU")))
    """)
    assert proc.stdout.splitlines() == [
        "2",
        "RuntimeError: Visible devices cannot be modified after being initialized",
        "RuntimeError: Virtual devices cannot be modified after being initialized",
        "2",
    ]


def test_hiding_the_cpu_before_a_session_is_a_value_error():
    proc = run_program("""
        import flowstone as tf

        try:
            tf.config.set_visible_devices([], "CPU")
        except ValueError as e:
            print("ValueError:", e)
    """)
    assert proc.stdout.strip() == "ValueError: The CPU must remain visible."


def test_device_spec_fields_strings_and_merging():
    spec = tf.DeviceSpec(job="ps", task=1, device_type="cpu", device_index=0)
    assert spec.to_string() == "/job:ps/task:1/device:CPU:0"
    assert tf.DeviceSpec(device_type="GPU").to_string() == "/device:GPU:*"
    parsed = tf.DeviceSpec.from_string("/job:w/replica:0/task:2/gpu:1")
    assert (parsed.job, parsed.replica, parsed.task, parsed.device_type,
            parsed.device_index) == ("w", 0, 2, "GPU", 1)
    merged = tf.DeviceSpec.from_string("/gpu:1")
    merged.merge_from(tf.DeviceSpec.from_string("/job:ps/cpu:0"))
    assert merged.to_string() == "/job:ps/device:CPU:0"
    assert spec.replace(task=3).to_string() == "/job:ps/task:3/device:CPU:0"
    assert tf.DeviceSpec(job="a") == tf.DeviceSpec.from_string("/job:a")
    with pytest.raises(ValueError):
        tf.DeviceSpec.from_string("/gpu:zero")
    with tf.device(tf.DeviceSpec(device_type="CPU", device_index=1)):
        assert tf.constant(1.0).device == "/device:CPU:1"
