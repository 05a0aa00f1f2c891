"""Calls that `make fuzz` (tests/fuzz) found crashing, hanging or raising something other than a
Status error, reduced to the smallest call that showed it. Each must now fail cleanly (or work)
and leave the graph and session usable. docs/RELIABILITY.md lists them with their causes."""

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from flowstone.framework.ops import apply_op


@pytest.mark.parametrize("num_split", [2**62, 2**20 + 1, -1])
def test_a_huge_or_negative_output_list_length_is_a_value_error(num_split):
    # num_split=2**62 used to fill a vector of 2**62 output dtypes: the process hung and then
    # ran out of memory while the graph was being built.
    x = tf.constant(np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match=f"Split: attr 'num_split' must be >= 0 and at most "
                                         f"1048576, got {num_split}"):
        apply_op("Split", [tf.constant(0), x], {"num_split": num_split})
    assert tf.split(x, 2, axis=1)[1].shape.as_list() == [2, 2]


def test_a_list_length_attr_that_disagrees_with_huge_values_is_a_value_error():
    x = tf.constant([1.0])
    with pytest.raises(ValueError, match="AddN: attr 'N' must be >= 0 and at most 1048576, got "
                                         "4294967298"):
        apply_op("AddN", [[x, x]], {"N": 2**32 + 2})  # used to be cast to int: 2


@pytest.mark.parametrize("value", [True, 7, {"a": 1}, "SAME", None])
def test_a_list_attr_given_a_non_list_is_a_status_type_error(value):
    # A bool or an int raised a bare TypeError from iterating it, a dict or a string was read
    # as a list of its keys or characters.
    graph = _C.Graph()
    x = graph.add_node("Const", "x", [], [], {"value": np.ones((1, 2, 2, 1), np.float32),
                                              "dtype": 1}, "", "")
    with pytest.raises(_C.StatusError, match="Expected a list of ints for attr 'strides'"):
        graph.add_node("Conv2D", "conv", [(x, 0), (x, 0)], [],
                       {"strides": value, "padding": "SAME"}, "", "")
    with pytest.raises(TypeError, match="Expected a list of ints for attr 'strides', got True"):
        apply_op("Conv2D", [tf.ones([1, 2, 2, 1]), tf.ones([1, 1, 1, 1])],
                 {"strides": True, "padding": "SAME"})


def test_fetching_an_empty_tensor_that_numpy_cannot_shape_is_a_status_error():
    # Tile of an empty tensor by huge multiples is empty, but numpy multiplies the non-zero
    # dimensions anyway: the fetch raised numpy's bare ValueError ("array is too big").
    empty = tf.zeros([3, 0, 2])
    tiled = tf.tile(empty, tf.constant([2**40, 5, 2**40], tf.int64))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"cannot fetch a tensor of shape \[3298534883328,0,"
                                 r"2199023255552\] as a numpy array"):
            sess.run(tiled)
        assert sess.run(tf.size(tiled)) == 0


def test_concat_offset_without_shapes_is_an_error_not_a_segfault():
    # The kernel read the first shape (input 1) of a node that had none: SIGSEGV.
    with pytest.raises(ValueError, match=r"ConcatOffset needs at least one shape \(N >= 1\), "
                                         "got N = 0"):
        apply_op("ConcatOffset", [tf.constant(0), []])
    offsets = apply_op("ConcatOffset", [tf.constant(0), [tf.constant([2, 3])]])
    with tf.Session() as sess:
        assert sess.run(offsets.outputs[0]).tolist() == [0, 0]


def test_pack_of_no_values_is_an_error_not_a_segfault():
    # The shape function read the first input's shape of a node without inputs: SIGSEGV.
    with pytest.raises(ValueError, match=r"Attr 'N' of 'Pack' Op passed 0 less than minimum 1\."):
        apply_op("Pack", [[]], {"T": tf.bool, "axis": 0})
    assert tf.stack([tf.constant(True)]).shape.as_list() == [1]


# I0(710) and I1(710) from libstdc++'s series (std::cyl_bessel_i), which still works there.
@pytest.mark.parametrize("op, sign, at_710", [("BesselI0", 1.0, 3.3453345586196545e306),
                                              ("BesselI1", -1.0, 3.3429778585097626e306)])
def test_bessel_of_huge_arguments_is_computed_not_an_escaped_exception(op, sign, at_710):
    # std::cyl_bessel_i throws for x = 1e10 or +inf; the exception left the kernel as a bare
    # RuntimeError (found by the fuzz smoke test the day BesselI0 and BesselI1 landed).
    x = tf.constant([np.inf, -np.inf, 1e10, -2.77e30, 710.0, -710.0], tf.float64)
    with tf.Session() as sess:
        got = sess.run(apply_op(op, [x]).outputs[0])
    expected = [np.inf, sign * np.inf, np.inf, sign * np.inf, at_710, sign * at_710]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_svd_of_a_matrix_with_inf_or_nan_gives_nan_factors_instead_of_hanging():
    # LAPACK's gesdd looped for minutes on a matrix holding inf (make fuzz counted a hang);
    # TensorFlow returns NaN factors for such a matrix, and so does Flowstone now.
    a = tf.constant([[[np.inf, 1.0], [1.0, 1.0]], [[3.0, 0.0], [0.0, 2.0]]], tf.float64)
    s, u, v = tf.linalg.svd(a)
    with tf.Session() as sess:
        s, u, v = sess.run([s, u, v])
    assert np.isnan(s[0]).all() and np.isnan(u[0]).all() and np.isnan(v[0]).all()
    np.testing.assert_allclose(s[1], [3.0, 2.0])


@pytest.mark.parametrize("op, big_shape", [("DepthToSpace", [1, 2**50, 1, 0]),
                                           ("SpaceToDepth", [1, 2**21, 2**21, 2**30])])
def test_a_huge_block_size_is_an_error_not_a_division_by_zero(op, big_shape):
    # block_size=2**40: block_size squared wrapped to 0 and the shape function divided by it
    # (SIGFPE). An empty input made it reachable without any memory.
    x = tf.zeros([5, 0, 1, 2], tf.float16)
    with pytest.raises(ValueError, match="Value for attr 'block_size' of 1099511627776 is too "
                                         "large: its square must fit in 64 bits"):
        apply_op(op, [x], {"block_size": 2**40})
    with pytest.raises(ValueError, match="overflows int64"):
        apply_op(op, [tf.placeholder(tf.float32, big_shape)], {"block_size": 2**21})


def test_integer_bias_add_and_its_gradient_wrap_around_on_overflow():
    # Signed integer overflow in the per-channel sums (UBSan under make fuzz): integers are now
    # added as their unsigned type, so they wrap around as in numpy and TensorFlow.
    big = np.iinfo(np.int64).max
    grad = np.array([[[-3765556709937561373], [-5959612375681000768]],
                     [[big], [big]]], np.int64)
    with tf.Session() as sess:
        got = sess.run(apply_op("BiasAddGrad", [tf.constant(grad)]).outputs[0])
        with np.errstate(over="ignore"):
            expected = grad.sum(axis=(0, 1))
        np.testing.assert_array_equal(got, expected)
        x = np.array([[2**31 - 1, -2**31]], np.int32)
        added = sess.run(tf.nn.bias_add(tf.constant(x), tf.constant([1, -1], tf.int32)))
        np.testing.assert_array_equal(added, [[-2**31, 2**31 - 1]])


@pytest.mark.parametrize("op", ["Cumsum", "Cumprod"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_scans_wrap_around_on_overflow(op, dtype):
    # Cumsum of INT64_MIN + 1 values and Cumprod of large int32s overflowed signed integers.
    info = np.iinfo(dtype)
    x = np.array([info.max, info.max, info.min + 1, 3, info.max // 2 + 7], dtype)
    with tf.Session() as sess:
        got = sess.run(apply_op(op, [tf.constant(x), tf.constant(0)]).outputs[0])
    with np.errstate(over="ignore"):
        expected = np.cumsum(x, dtype=dtype) if op == "Cumsum" else np.cumprod(x, dtype=dtype)
    np.testing.assert_array_equal(got, expected)


def test_a_huge_dilation_is_an_error_not_an_overflow():
    # rates=[1, 2**62, 1, 1]: the dilated kernel size (k - 1) * rate + 1 overflowed int64
    # (UBSan); the window arithmetic now checks it, and paddings and strides too.
    x = tf.placeholder(tf.float32)
    f = tf.placeholder(tf.float32, [3, 2, 2])
    y = apply_op("Dilation2D", [x, f], {"strides": [1, 1, 1, 1], "rates": [1, 2**62, 1, 1],
                                        "padding": "VALID"}).outputs[0]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Sliding window arithmetic overflows int64: input size 5, "
                                 "kernel size 3, dilation 4611686018427387904"):
            sess.run(y, {x: np.ones((2, 5, 6, 2), np.float32), f: np.ones((3, 2, 2), np.float32)})


def test_tile_whose_output_size_overflows_is_a_status_error():
    # [2, 3] tiled by [1651288836, 2128377882]: the element count overflowed int64 while the
    # OOM error was being written (UBSan). Now it is the OOM error; one dimension that
    # overflows by itself is an InvalidArgument naming it.
    x = tf.placeholder(tf.float64, [2, 3])
    multiples = tf.placeholder(tf.int32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError, match=r"OOM when allocating tensor "
                                                                   r"with shape\[3302577672,"
                                                                   r"6385133646\]"):
            sess.run(tf.tile(x, multiples), {x: np.ones((2, 3)),
                                             multiples: [1651288836, 2128377882]})
        message = (r"Tile: output dimension 0 \(input dimension 2 times multiples\[0\] = "
                   r"4611686018427387904\) overflows int64")
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            big = tf.placeholder(tf.int64)
            sess.run(tf.tile(x, big), {x: np.ones((2, 3)), big: [2**62, 1]})
    with pytest.raises(ValueError, match=message):  # known multiples: at graph construction
        tf.tile(x, tf.constant([2**62, 1], tf.int64))


def test_gather_of_a_scalar_with_an_unknown_axis_is_an_error_at_graph_construction():
    # params of rank 0 and an axis only known at run time: the shape function made an
    # unknown shape of rank -1 (AddressSanitizer: negative-size-param).
    with pytest.raises(ValueError, match="params must be at least 1 dimensional"):
        apply_op("GatherV2", [tf.constant(-1), tf.constant(5, tf.int64),
                              tf.placeholder(tf.int64)])


def test_a_segment_count_whose_output_size_overflows_is_a_status_error():
    # num_segments=2**62 with rows of 7: the session's cost heuristic multiplied the static
    # output shape [2**62, 7] and overflowed (UBSan). Element counts now saturate.
    data = tf.constant(np.ones((3, 2, 7), np.int64))
    ids = tf.constant(np.zeros((3, 2), np.int32))
    out = tf.math.unsorted_segment_sum(data, ids, tf.constant(2**62, tf.int64))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError, match="OOM when allocating"):
            sess.run(out)


@pytest.mark.parametrize("op", ["SparseSegmentSum", "UnsortedSegmentSum", "UnsortedSegmentProd"])
def test_integer_segment_reductions_wrap_around_on_overflow(op):
    big = np.iinfo(np.int64).max
    data = np.array([[big, 3], [big, 5], [7, big]], np.int64)
    with np.errstate(over="ignore"):
        if op == "UnsortedSegmentProd":
            expected = np.prod(data, axis=0, keepdims=True)
        else:
            expected = np.sum(data, axis=0, keepdims=True)
    if op == "SparseSegmentSum":
        inputs = [tf.constant(data), tf.constant([0, 1, 2]), tf.constant([0, 0, 0])]
    else:
        inputs = [tf.constant(data), tf.constant([0, 0, 0]), tf.constant(1)]
    with tf.Session() as sess:
        got = sess.run(apply_op(op, inputs).outputs[0])
    np.testing.assert_array_equal(got, expected)


def test_add_n_without_inputs_is_a_value_error():
    # AddN with N=0 read the shape of input 0 of a node that had none (UBSan: reference
    # binding to null); now TensorFlow's "less than minimum" error, as for Pack.
    graph = _C.Graph()
    with pytest.raises(_C.StatusError, match="Attr 'N' of 'AddN' Op passed 0 less than "
                                             "minimum 1."):
        graph.add_node("AddN", "add", [], [], {"T": 3}, "", "")


def test_integer_add_n_and_variable_updates_wrap_around_on_overflow():
    big = np.array([2**62, -2**63, 5], np.int64)
    v = tf.Variable(big)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(sess.run(tf.add_n([v.value(), v.value(), v.value()])),
                                          big + big + big)
            sess.run(v.assign_add(big))
            np.testing.assert_array_equal(sess.run(v), big + big)
            sess.run(v.assign_sub(np.array([-2**63, 1, 2**63 - 1], np.int64)))
            np.testing.assert_array_equal(
                sess.run(v), big + big - np.array([-2**63, 1, 2**63 - 1], np.int64))



@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_scatter_updates_of_variables_wrap_around_on_overflow(dtype):
    # ResourceScatterAdd/Sub/Mul and ResourceScatterNdAdd/Sub combined rows with plain + - *
    # (UBSan: signed overflow, asan16 run); they wrap now, as in TensorFlow.
    top = np.iinfo(dtype).max
    start = np.array([[top, 3], [-top, 5]], dtype)
    rows = np.array([[top, 2], [top, 7]], dtype)
    v = tf.Variable(start)
    cases = [(tf.scatter_add(v, [0, 1], rows), start + rows),
             (tf.scatter_sub(v, [1, 0], rows), start - rows[::-1]),
             (tf.scatter_mul(v, [0, 1], rows), start * rows),
             (tf.scatter_nd_add(v, [[1], [1]], rows), start + [[0, 0], rows[0] + rows[1]]),
             (tf.scatter_nd_sub(v, [[0]], rows[:1]), start - [rows[0], [0, 0]])]
    with tf.Session() as sess, np.errstate(over="ignore"):
        for update, expected in cases:
            sess.run(v.initializer)
            sess.run(update)
            np.testing.assert_array_equal(sess.run(v), expected.astype(dtype))

@pytest.mark.parametrize("paddings", [[[-7599054045295656413, -5156970955368076164], [0, 0]],
                                      [[7224747493100936066, 8429702924079202986], [0, 0]]])
def test_mirror_pad_grad_with_huge_paddings_is_an_error_not_an_overflow(paddings):
    # The sum of a dimension's two paddings overflowed int64 (UBSan) before it was compared
    # with the dimension.
    grad = tf.placeholder(tf.float64)
    pads = tf.placeholder(tf.int64)
    out = apply_op("MirrorPadGrad", [grad, pads], {"mode": "SYMMETRIC"}).outputs[0]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Paddings must be non-negative|of dimension 0 exceed its size"):
            sess.run(out, {grad: np.ones((5, 6)), pads: np.array(paddings, np.int64)})


def test_pad_whose_padded_size_overflows_is_an_error():
    x = tf.placeholder(tf.float32, [2, 3])
    pads = tf.placeholder(tf.int64, [2, 2])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Padded dimension 0 \(2 \+ 9223372036854775807 \+ 1\) "
                                 r"overflows int64"):
            sess.run(tf.pad(x, pads), {x: np.ones((2, 3)), pads: [[2**63 - 1, 1], [0, 0]]})


def test_unsorted_segment_sum_kernel_wraps_integer_overflow():
    # UnsortedSegmentSum's own kernel (slice_ops.cc) summed int64 rows with a signed +=.
    big = np.iinfo(np.int64).max
    got_op = tf.math.unsorted_segment_sum(tf.constant([[big], [big]], tf.int64),
                                          tf.constant([1, 1]), 2)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(got_op), [[0], [-2]])


def test_extract_image_patches_whose_depth_overflows_is_an_error():
    # ksizes=[1, 2, 2**62, 1]: the output depth 6 * 2 * 2**62 overflowed int64 (UBSan).
    images = tf.placeholder(tf.float64)
    patches = apply_op("ExtractImagePatches", [images],
                       {"ksizes": [1, 2, 2**62, 1], "strides": [1, 2, 1, 1],
                        "rates": [1, 1, 1, 1], "padding": "SAME"}).outputs[0]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Output depth 3 \\* 2 \\* 4611686018427387904 overflows int64"):
            sess.run(patches, {images: np.ones((2, 6, 4, 3))})


def test_a_sorted_segment_id_of_int64_max_is_an_error():
    # The segment count, the last id + 1, overflowed int64 (UBSan in SegmentMin).
    data = tf.constant(np.ones((2, 2), np.float32))
    ids = tf.placeholder(tf.int64, [2])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="segment id 9223372036854775807 is too large"):
            sess.run(tf.math.segment_min(data, ids), {ids: [2**63 - 1, 2**63 - 1]})


@pytest.mark.parametrize("queue_op", ["FIFOQueueV2", "RandomShuffleQueueV2", "PaddingFIFOQueueV2"])
def test_a_queue_without_components_is_an_error_not_a_segfault(queue_op):
    # QueueEnqueueManyV2 into a queue of component_types=[] read the first component of an empty
    # tuple for its batch size: SIGSEGV. As in TensorFlow, such a queue is rejected when built.
    with pytest.raises(ValueError, match=f"Attr 'component_types' of '{queue_op}' Op passed list "
                                         f"of length 0 less than minimum 1"):
        apply_op(queue_op, [], {"component_types": []})
    queue = tf.FIFOQueue(4, [tf.int32])
    with tf.Session() as sess:
        sess.run(queue.enqueue_many([[1, 2]]))
        assert sess.run(queue.dequeue()) == 1


def test_a_zip_of_no_datasets_is_an_error():
    # ZipDataset with N=0 made an endless dataset of empty tuples; TensorFlow requires N >= 1.
    with pytest.raises(ValueError, match="Attr 'N' of 'ZipDataset' Op passed 0 less than minimum 1"):
        apply_op("ZipDataset", [[]], {"output_types": [], "output_shapes": []})
    zipped = tf.data.Dataset.zip((tf.data.Dataset.range(2), tf.data.Dataset.range(3)))
    with tf.Session() as sess:
        assert sess.run(zipped.make_one_shot_iterator().get_next()) == (0, 0)


def test_serialize_many_sparse_with_a_huge_first_dimension_is_resource_exhausted():
    # dense_shape [2**31, 2**31] made SerializeManySparse size its per-row bookkeeping by the
    # shape before allocating anything checked: std::bad_alloc. Now the [rows, 3] output is
    # allocated first, against the memory limit.
    huge = tf.SparseTensor([[0, 1]], [1.5], [2**31, 2**31])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError):
            sess.run(tf.io.serialize_many_sparse(huge))
        negative = tf.SparseTensor(np.zeros([0, 2], np.int64), np.zeros([0], np.float32), [-1, 2])
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be non-negative"):
            sess.run(tf.io.serialize_many_sparse(negative))
        small = tf.SparseTensor([[1, 0]], [2.0], [2, 3])
        assert sess.run(tf.io.serialize_many_sparse(small)).shape == (2, 3)


def test_folding_a_node_whose_static_output_shape_overflows_bytes_is_not_tried():
    # AllCandidateSampler with constant inputs and num_sampled=2**62 has the static output shape
    # [2**62]: the constant folder multiplied it by 8 bytes (signed overflow, UBSan) to compare it
    # with its size limit. The folder now skips it; the kernel reports the allocation.
    true_classes = tf.constant(np.array([[3, 4], [1, 2]], np.int64))
    huge = tf.random.all_candidate_sampler(true_classes, num_true=2, num_sampled=2**62,
                                           unique=True)
    small = tf.random.all_candidate_sampler(true_classes, num_true=2, num_sampled=5, unique=True)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError,
                           match=r"shape\[4611686018427387904\] and type int64"):
            sess.run(huge[0])
        sampled, true_expected, sampled_expected = sess.run(small)
    np.testing.assert_array_equal(sampled, np.arange(5))
    np.testing.assert_array_equal(true_expected, np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(sampled_expected, np.ones(5, np.float32))
    # SetSize's static output shape is set_shape[:-1], whose element count saturates.
    indices = tf.constant(np.zeros((0, 3), np.int64))
    values = tf.constant(np.zeros((0,), np.uint8))
    set_shape = tf.constant(np.array([2**62 + 5, 2**61 + 3, 7], np.int64))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError, match="type int32"):
            sess.run(apply_op("SetSize", [indices, values, set_shape], {}).outputs[0])


def test_folding_allocates_from_a_budget_not_from_the_whole_machine():
    # SegmentSum's output size is known only from the ids' values: the constant folder ran the
    # kernel with the process's allocator, which handed out 16 GiB for an id of 2**31 + 1 before
    # the result was dropped as too big to fold (the session's memory limit was never asked).
    # The folder's kernels now allocate from a budget; the node runs under the session's limit.
    data = tf.constant(np.array([[1, 2], [3, 4], [5, 6]], np.int32))
    config = tf.ConfigProto()
    config.experimental.cpu_memory_limit_mb = 256
    with tf.Session(config=config) as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError,
                           match=r"shape\[2147483650,2\] and type int32.*limit 268435456 bytes"):
            sess.run(tf.math.segment_sum(data, tf.constant([1, 1, 2**31 + 1], tf.int64)))
        np.testing.assert_array_equal(
            sess.run(tf.math.segment_sum(data, tf.constant([0, 0, 2], tf.int64))),
            [[4, 6], [0, 0], [5, 6]])


def test_string_outputs_count_against_the_sessions_memory_limit():
    # String (and variant, resource) outputs came from the process's allocator even on the CPU:
    # UnsortedSegmentJoin with num_segments=609525267 allocated 20 GiB of std::string under a
    # 256 MiB session limit. On a host device they now come from the device's allocator.
    config = tf.ConfigProto()
    config.experimental.cpu_memory_limit_mb = 256
    inputs = tf.placeholder(tf.string, [4])
    ids = tf.placeholder(tf.int32, [4])
    num_segments = tf.placeholder(tf.int32, [])
    joined = tf.strings.unsorted_segment_join(inputs, ids, num_segments, separator="-")
    feed = {inputs: [b"a", b"b", b"c", b"d"], ids: [1, 0, 1, 3]}
    with tf.Session(config=config) as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError,
                           match=r"shape\[20000000\] and type string.*limit 268435456 bytes"):
            sess.run(joined, {**feed, num_segments: 20_000_000})
        assert sess.run(joined, {**feed, num_segments: 4}).tolist() == [b"b", b"a-c", b"", b"d"]


def test_string_format_with_a_huge_summarize_prints_everything():
    # summarize=2**62 overflowed `2 * summarize` while the tensor was summarized (UBSan).
    x = tf.constant(np.arange(12.0).reshape(3, 4))
    out = apply_op("StringFormat", [[x]], {"template": "m: %s", "summarize": 2**62})
    with tf.Session() as sess:
        assert sess.run(out.outputs[0]) == (b"m: [[0 1 2 3]\n [4 5 6 7]\n [8 9 10 11]]")


def test_parse_example_attrs_whose_lengths_disagree_are_an_error():
    # num_sparse=5 with one sparse_types entry: the shape function wrote output shapes past the
    # node's outputs (ASan: heap-buffer-overflow). TensorFlow requires the lengths to agree.
    serialized = tf.constant([b""])
    empty = tf.constant(np.zeros([0], object), tf.string)
    inputs = [serialized, empty, empty, empty, empty, []]
    attrs = {"Tdense": [], "num_sparse": 5, "sparse_types": [tf.int64],
             "ragged_value_types": [], "ragged_split_types": [], "dense_shapes": []}
    with pytest.raises(ValueError, match=r"ParseExampleV2: num_sparse \(5\) must equal the "
                                         r"length of sparse_types \(1\)"):
        apply_op("ParseExampleV2", inputs, attrs)
    with pytest.raises(ValueError, match="ParseExampleV2: 2 dense_shapes for 0 Tdense types"):
        apply_op("ParseExampleV2", inputs, dict(attrs, num_sparse=1, dense_shapes=[[1], [2]]))


def test_reading_a_reader_handle_as_a_variable_is_an_error():
    # A reader's (or queue's) handle is a resource slot holding a variant: ReadVariableOp with
    # dtype=float32 handed that variant on as a float32 tensor (the fetch raised a bare
    # TypeError; a consumer would have read the variant's bytes as floats).
    reader = tf.TextLineReader()
    read = apply_op("ReadVariableOp", [reader.reader_ref], {"dtype": tf.float32})
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="with wrong dtype. Expected float32 got variant"):
            sess.run(read.outputs[0])
        v = tf.Variable(3.0)
        sess.run(v.initializer)
        assert sess.run(v.read_value()) == 3.0


@pytest.mark.parametrize("data_format,shape", [("NHWC", (1, 4, 7, 0)), ("NCHW", (3, 0)),
                                               ("NHWC", (0, 0))])
def test_bias_gradients_of_zero_channels_are_empty_not_a_division_by_zero(data_format, shape):
    # The channels-last sum of BiasAddGrad and _ReluGradBiasAddGrad grouped 64 / channels rows
    # at once: with no channels the process died of SIGFPE (release run, 2026-11-27).
    x = tf.placeholder(tf.float32, [None] * len(shape))
    value = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 1
    bias_grad = apply_op("BiasAddGrad", [x], {"data_format": data_format})
    fused = apply_op("_ReluGradBiasAddGrad", [x, x], {"data_format": data_format})
    with tf.Session() as sess:
        got, (backprops, fused_bias) = sess.run([bias_grad.outputs[0], fused.outputs], {x: value})
        channels = shape[1] if data_format == "NCHW" else shape[-1]
        assert got.shape == fused_bias.shape == (channels,)
        assert backprops.shape == shape
        ones = np.ones((2, 3) + (1,) * (len(shape) - 2), np.float32)  # channels: dim 1 or last
        assert sess.run(bias_grad.outputs[0], {x: ones}).sum() == 6.0


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_ragged_range_does_not_step_past_its_last_value(dtype):
    # The kernel added delta once more after the last value: 8 by -1815985065 in int32 left the
    # type's range (UBSan: signed integer overflow; ASan run 2026-11-27).
    delta = np.iinfo(dtype).min + 1 if dtype == np.int64 else -1815985065
    args = [tf.constant(np.array(x, dtype)) for x in (8, delta, delta)]
    out = apply_op("RaggedRange", args, {})
    with tf.Session() as sess:
        splits, values = sess.run(out.outputs)
    assert splits.tolist() == [0, 2]
    assert values.tolist() == [8, 8 + int(delta)]


def test_sparse_split_into_zero_pieces_is_an_error_not_a_division_by_zero():
    # num_split=0 divided the split dimension by 0 (UBSan: division by zero; ASan run
    # 2026-11-27). As in TensorFlow, num_split must be at least 1.
    inputs = [tf.constant(np.int64(1)), tf.constant(np.array([[0, 0], [1, 3]], np.int64)),
              tf.constant([1.0, 2.0]), tf.constant(np.array([4, 5], np.int64))]
    with pytest.raises(ValueError, match="Attr 'num_split' of 'SparseSplit' Op passed 0 less "
                                         "than minimum 1."):
        apply_op("SparseSplit", inputs, {"num_split": 0})
    pieces = apply_op("SparseSplit", inputs, {"num_split": 2})
    with tf.Session() as sess:
        out = sess.run(pieces.outputs)
    assert [o.tolist() for o in out[:2]] == [[[0, 0]], [[1, 0]]]
    assert [o.tolist() for o in out[4:]] == [[4, 3], [4, 2]]


@pytest.mark.parametrize("op, block, amounts, shape, error", [
    # SpaceToBatchND: padded size past int64, the output batch past int64.
    ("SpaceToBatchND", [3], [[2**63 - 1, 3]], (1, 6, 2), "does not fit int64"),
    ("SpaceToBatchND", [2**62], [[0, 0]], (4, 0, 1), "does not fit int64"),
    # BatchToSpaceND: an empty batch whose size before cropping passes int64, or whose crops
    # sum past it.
    ("BatchToSpaceND", [2**62], [[0, 0]], (0, 3, 1), "does not fit int64"),
    ("BatchToSpaceND", [1], [[2**63 - 1, 2**63 - 1]], (0, 0, 1), "crops must not exceed"),
])
def test_space_batch_output_dims_past_int64_are_errors_not_overflows(op, block, amounts, shape,
                                                                      error):
    # SpaceToBatchND's kernel added paddings [[INT64_MAX, 3]] to a dimension of 6 (UBSan: signed
    # integer overflow; ASan run 2026-11-27, fuzzall); the other three wrapped the same way.
    block, amounts = np.array(block, np.int64), np.array(amounts, np.int64)
    # Fed: the kernel checks them.
    x = tf.placeholder(tf.int64)
    out = apply_op(op, [x, tf.constant(block), tf.constant(amounts)], {})
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=error):
            sess.run(out.outputs[0], {x: np.zeros(shape, np.int64)})
    # Known shapes: the shape function does.
    with pytest.raises(ValueError, match=error):
        apply_op(op, [tf.constant(np.zeros(shape, np.int64)), tf.constant(block),
                      tf.constant(amounts)], {})


def test_betainc_whose_a_plus_b_overflows_returns_instead_of_recursing_forever():
    # a = b = 1e308: a + b is inf, both thresholds of the continued fraction's symmetry were 0,
    # and IncompleteBeta swapped (a, b, x) back and forth until the stack overflowed (ASan:
    # stack-overflow, SIGABRT; ASan run 2026-11-27, fuzzall). The swap is made once only.
    a, b, x = (tf.constant(np.array(v, np.float64)) for v in ([1e308, 2], [1e308, 3], [0.5, 0.7]))
    with tf.Session() as sess:
        huge, usual = sess.run(tf.math.betainc(a, b, x))
    assert np.isnan(huge) or 0 <= huge <= 1
    # I_0.7(2, 3) = sum_{j=2..4} C(4, j) 0.7^j 0.3^(4-j), through the swapped branch.
    assert usual == pytest.approx(6 * 0.49 * 0.09 + 4 * 0.343 * 0.3 + 0.7**4, rel=1e-12)


def test_integer_resize_nearest_neighbor_gradients_wrap_around_on_overflow():
    # Two int64 gradients of INT64_MAX summed into one input pixel overflowed (UBSan: signed
    # integer overflow; ASan run 2026-11-27, fuzzall); they wrap, as in TensorFlow.
    big = np.iinfo(np.int64).max
    grads = tf.constant(np.full((1, 1, 2, 1), big, np.int64))
    out = apply_op("ResizeNearestNeighborGrad", [grads, tf.constant([1, 1])], {})
    with tf.Session() as sess:
        assert sess.run(out.outputs[0]).tolist() == [[[[-2]]]]


@pytest.mark.parametrize("widths, pad_width", [([2**62], -3), ([2**62], -1), ([2, 2**62], 2**62)])
def test_string_ngrams_longer_than_int64_is_an_error_not_an_overflow(widths, pad_width):
    # A width near 2^62 padded by width - 1 on both sides: the n-gram count overflowed (UBSan,
    # asan16 run).
    data = tf.constant([b"a", b"b", b"c"])
    splits = tf.constant(np.array([0, 3], np.int64))
    attrs = {"separator": "|", "ngram_widths": widths, "left_pad": "<", "right_pad": ">",
             "pad_width": pad_width, "preserve_short_sequences": False}
    grams = apply_op("StringNGrams", [data, splits], attrs).outputs[0]
    bigrams = apply_op("StringNGrams", [data, splits], dict(attrs, ngram_widths=[2],
                                                            pad_width=0)).outputs[0]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="StringNGrams: the n-grams of a sequence of 3 tokens do not "
                                 "fit int64"):
            sess.run(grams)
        assert sess.run(bigrams).tolist() == [b"a|b", b"b|c"]


def test_counting_int64_max_without_maxlength_is_an_error_not_an_overflow():
    # The dense shape's last dimension, largest value + 1, overflowed for INT64_MAX (UBSan,
    # asan16 run); with maxlength the value is skipped, as in TensorFlow.
    values = tf.constant(np.full(4, 2**63 - 1, np.int64))
    weights = tf.constant(np.zeros(0, np.float64))
    counted = apply_op("DenseCountSparseOutput", [values, weights], {"binary_output": True})
    capped = apply_op("DenseCountSparseOutput", [values, weights],
                      {"binary_output": True, "maxlength": 5})
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="DenseCountSparseOutput: value 9223372036854775807 leaves no "
                                 "room for the output's dense shape"):
            sess.run(counted.outputs[2])
        indices, counts, shape = sess.run(capped.outputs)
        assert indices.shape == (0, 1) and counts.size == 0 and shape.tolist() == [5]


def test_sampling_a_crop_of_an_image_larger_than_int64_pixels_does_not_overflow():
    # image_size [2**62, 2**32, 1]: the image's area, width * height, overflowed int64 (UBSan,
    # asan16 run); areas are multiplied in floats now, as TensorFlow does.
    size = tf.constant(np.array([2**62, 2**32, 1], np.int64))
    boxes = tf.constant(np.zeros((1, 0, 4), np.float32))
    begin, crop, _ = apply_op("SampleDistortedBoundingBox", [size, boxes],
                              {"seed": 3, "area_range": [1.0, 1.0],
                               "aspect_ratio_range": [0.75, 0.75],
                               "use_image_if_no_bounding_boxes": True}).outputs
    with tf.Session() as sess:
        b, c = sess.run([begin, crop])
    assert (b >= 0).all() and (c[:2] > 0).all() and (b[:2] + c[:2] <= [2**62, 2**32]).all()
