"""tf.data.Dataset: a Python description over the C++ dataset ops (src/ops/data).

Each Dataset builds its op (a scalar variant tensor) in the default graph when it is made, as TF1
does. It can build itself again in another graph: make_one_shot_iterator builds it inside the
OneShotIterator's dataset_factory function. Functions given to map, filter, flat_map and
interleave are traced once per graph into graph functions that the C++ iterator runs with no
Python per element.
"""

import itertools
import threading
import weakref

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.func_graph import FuncGraph, function_base_name
from flowstone.framework.tensor_shape import TensorShape
from flowstone.framework.type_spec import most_specific_shape
from flowstone.ops import dataset_bucketing
from flowstone.ops import dataset_structure as structure
from flowstone.ops import eager_iterator
from flowstone.ops import iterator_ops
from flowstone.ops import random_ops
from flowstone.ops import ragged_tensor as _ragged_tensor
from flowstone.ops import script_ops
from flowstone.util.tf_export import export_value, tf_export

# Lets the runtime choose a buffer size or a parallelism (see docs/COMPAT.md for what it picks).
AUTOTUNE = -1
export_value("data.experimental.AUTOTUNE", AUTOTUNE)
export_value("data.AUTOTUNE", AUTOTUNE)

# Dataset.cardinality() of a dataset without end, and of one whose length needs running it.
INFINITE = -1
UNKNOWN = -2
export_value("data.INFINITE_CARDINALITY", INFINITE)
export_value("data.experimental.INFINITE_CARDINALITY", INFINITE)
export_value("data.UNKNOWN_CARDINALITY", UNKNOWN)
export_value("data.experimental.UNKNOWN_CARDINALITY", UNKNOWN)


def _int64(value, name):
    return _ops.convert_to_tensor(value, dtype=_dtypes.int64, name=name)


def _trace(fn, element_spec, kind):
    """Traces `fn` on an element of `element_spec` into a function of the default graph's library.
    Returns (function name, captured outer tensors, what fn returned as body tensors)."""
    graph = _ops.get_default_graph()
    body = FuncGraph(function_base_name(graph, kind), graph)
    args = [body.add_input(s.dtype, s.shape) for s in structure.flat_tensor_specs(element_spec)]
    with body.as_default():
        # A component that is a dataset (a window) is passed to fn as a Dataset; a composite's
        # variant is decoded to the SparseTensor or RaggedTensor it holds.
        element = structure.from_tensor_list(element_spec, args)
        element = structure.pack(element_spec, [
            _VariantDataset(value, s.element_spec) if isinstance(s, structure.DatasetSpec)
            else value
            for value, s in zip(structure.flatten(element), structure.flatten(element_spec))])
        # A tuple element is passed as separate arguments, as TF does.
        if isinstance(element, tuple) and not hasattr(type(element), "_fields"):
            result = fn(*element)
        else:
            result = fn(element)
        if isinstance(result, list):
            result = tuple(result)  # tf.data reads a returned list as a tuple
        result = structure.normalize(result)
        values = []
        for value in structure.flatten(result):
            if isinstance(value, _ops.Operation):
                raise TypeError(f"The function given to {kind} returned the Operation "
                                f"'{value.name}'; return tensors.")
            values.append(structure.as_value(value))
        result = structure.pack(result, values)
        flat = [t if t.graph is body else body._capture(t, kind)
                for t in structure.to_tensor_list(structure.spec_of(result), result)]
    captured = [outer for outer, _ in body.captures]
    body.add_to_library(args + [inner for _, inner in body.captures], flat)
    return body.name, captured, result


@tf_export("data.Dataset")
class DatasetV1:
    """A sequence of elements, each a structure (tuples, dicts) of tensors."""

    def __init__(self, inputs, element_spec, make):
        # make(*input variant tensors) adds this dataset's op to the default graph.
        self._inputs = list(inputs)
        self._element_spec = element_spec
        self._make = make
        self._variants = weakref.WeakKeyDictionary()
        if _ops.executing_eagerly():
            # Built when iterated (eager_iterator); a dataset whose element spec is known only
            # once its function is traced is built now into a scratch graph for that spec.
            if element_spec is None:
                self._trace_for_spec()
        else:
            self._variant_tensor = self._variant_in(_ops.get_default_graph())

    def _variant_in(self, graph):
        """This dataset's variant tensor in `graph` (built there on first use)."""
        found = self._variants.get(graph)
        if found is None:
            with graph.as_default():
                found = self._make(*[d._variant_in(graph) for d in self._inputs])
            self._variants[graph] = found
        return found

    def _trace_for_spec(self):
        scratch = eager_iterator.PipelineGraph()
        self._variant_in(scratch)
        pending = [self]  # the scratch graph is dropped by every dataset of the chain
        while pending:
            dataset = pending.pop()
            dataset._variants.pop(scratch, None)
            pending.extend(dataset._inputs)

    # --- element structure -----------------------------------------------------------------

    @property
    def element_spec(self):
        return self._element_spec

    @property
    def output_types(self):
        return structure.types_of(self._element_spec)

    @property
    def output_shapes(self):
        return structure.shapes_of(self._element_spec)

    @property
    def output_classes(self):
        return structure.classes_of(self._element_spec)

    def _spec_attrs(self, spec=None):
        spec = self._element_spec if spec is None else spec
        return {"output_types": structure.type_attrs(spec),
                "output_shapes": structure.shape_attrs(spec)}

    def _unary(self, op_type, scalars, spec=None, attrs=None, name=None):
        """A dataset of op `op_type` over this one with scalar int64/bool inputs `scalars`."""
        spec = self._element_spec if spec is None else spec

        def make(variant):
            all_attrs = dict(self._spec_attrs(spec), **(attrs or {}))
            inputs = [variant] + [s() for s in scalars]
            return _ops.apply_op(op_type, inputs, all_attrs, name=name or op_type).outputs[0]

        return DatasetV1([self], spec, make)

    # --- sources ---------------------------------------------------------------------------

    @staticmethod
    def from_tensors(tensors):
        """A dataset of one element, `tensors`."""
        value = structure.normalize(tensors)
        spec = structure.spec_of(structure.to_tensors(value))

        def make():
            components = structure.to_tensor_list(spec, structure.to_tensors(value))
            return _ops.apply_op("TensorDataset", [components], {
                "output_shapes": structure.shape_attrs(spec)}, name="TensorDataset").outputs[0]

        return DatasetV1([], spec, make)

    @staticmethod
    def from_tensor_slices(tensors):
        """A dataset of the slices of `tensors` along their first dimension."""
        value = structure.normalize(tensors)
        whole = structure.to_tensors(value)
        for t in structure.flatten(whole):
            if t.shape.ndims == 0:
                raise ValueError(f"Unbatching a tensor is only supported for rank >= 1, but "
                                 f"{t!r} is a scalar.")
        whole_spec = structure.spec_of(whole)
        spec = structure.unbatch_spec(whole_spec)

        def make():
            components = structure.to_batched_tensor_list(whole_spec,
                                                          structure.to_tensors(value))
            return _ops.apply_op("TensorSliceDataset", [components], {
                "output_shapes": structure.shape_attrs(spec)},
                name="TensorSliceDataset").outputs[0]

        return DatasetV1([], spec, make)

    @staticmethod
    def range(*args, output_type=_dtypes.int64):
        """start, stop, step as Python's range: range(5), range(2, 5), range(0, 10, 3)."""
        if len(args) == 1:
            start, stop, step = 0, args[0], 1
        elif len(args) == 2:
            start, stop, step = args[0], args[1], 1
        elif len(args) == 3:
            start, stop, step = args
        else:
            raise ValueError(f"Invalid arguments to RangeDataset: {args!r}")
        spec = structure.TensorSpec([], output_type)

        def make():
            return _ops.apply_op("RangeDataset", [
                _int64(start, "start"), _int64(stop, "stop"), _int64(step, "step")], {
                "output_types": [spec.dtype], "output_shapes": [[]]},
                name="RangeDataset").outputs[0]

        return DatasetV1([], spec, make)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        """The file names matching `file_pattern` (a glob, or a list of them), sorted, then
        shuffled unless shuffle=False."""
        def make():
            pattern = _ops.convert_to_tensor(file_pattern, dtype=_dtypes.string,
                                             name="file_pattern")
            return _ops.apply_op("MatchingFiles", [pattern], name="MatchingFiles").outputs[0]

        names = DatasetV1([], structure.TensorSpec([None], _dtypes.string),
                          lambda: _ops.apply_op("TensorDataset", [[make()]], {
                              "output_shapes": [[None]]}, name="TensorDataset").outputs[0])
        files = names.flat_map(DatasetV1.from_tensor_slices)
        if shuffle is False:
            return files
        return files.shuffle(_LIST_FILES_SHUFFLE_BUFFER, seed=seed)

    @staticmethod
    def counter(start=0, step=1, dtype=_dtypes.int64):
        """start, start + step, ... without end, of `dtype` (a scan over an endless dataset,
        as TF builds it)."""
        def count(state, _):
            return state + _ops.convert_to_tensor(step, dtype=dtype, name="step"), state

        if isinstance(start, (int, float, np.number)):
            start = np.asarray(start, dtype.as_numpy_dtype)
        return DatasetV1.from_tensors(0).repeat(None).scan(start, count)

    @staticmethod
    def random(seed=None, rerandomize_each_iteration=None):
        """Endless pseudo-random int64 values (TF's values differ: see docs/COMPAT.md)."""
        del rerandomize_each_iteration  # every iterator of one dataset draws the same values
        seed, seed2 = random_ops.get_seed(seed)
        seed, seed2 = (0 if seed is None else seed), (0 if seed2 is None else seed2)
        return DatasetV1([], structure.TensorSpec([], _dtypes.int64), lambda: _ops.apply_op(
            "RandomDataset", [_int64(seed, "seed"), _int64(seed2, "seed2")], {
                "output_types": [_dtypes.int64], "output_shapes": [[]]},
            name="RandomDataset").outputs[0])

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        """The next element of datasets[i] for each i of `choice_dataset` (scalar int64s);
        an ended dataset's choices are skipped, or end the output with stop_on_empty_dataset."""
        datasets = list(datasets)
        if not datasets:
            raise ValueError("Invalid `datasets`. `datasets` should not be empty.")
        choice = choice_dataset.element_spec
        if not isinstance(choice, structure.TensorSpec) or choice.dtype != _dtypes.int64 or (
                not choice.shape.is_compatible_with([])):
            raise TypeError(f"Invalid `choice_dataset`. Elements of `choice_dataset` must be "
                            f"scalar `tf.int64` tensors but are "
                            f"{choice_dataset.element_spec}.")
        spec = _common_spec([d.element_spec for d in datasets])

        def make(selector, *variants):
            return _ops.apply_op("DirectedInterleaveDataset", [selector, list(variants)], {
                "output_types": structure.type_attrs(spec),
                "output_shapes": structure.shape_attrs(spec),
                "stop_on_empty_dataset": bool(stop_on_empty_dataset)},
                name="DirectedInterleaveDataset").outputs[0]

        return DatasetV1([choice_dataset] + datasets, spec, make)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        """Elements drawn from `datasets` at random, dataset i with probability weights[i]
        (uniform when None; `weights` may be a dataset of weight vectors)."""
        datasets = list(datasets)
        if not datasets:
            raise ValueError("Invalid `datasets`. `datasets` should not be empty.")
        seeds = DatasetV1.random(seed, rerandomize_each_iteration).batch(2)
        if isinstance(weights, DatasetV1):
            selector = DatasetV1.zip((seeds, weights)).map(dataset_bucketing.varying_selector)
        else:
            if weights is not None and not isinstance(weights, _ops.Tensor) and (
                    len(weights) != len(datasets)):
                raise ValueError(f"Invalid `weights`. `weights` should have the same length as "
                                 f"`datasets` but got `len(weights)={len(weights)}` vs. "
                                 f"`len(datasets)={len(datasets)}`.")
            if len(datasets) == 1:
                return datasets[0]
            selector = seeds.map(dataset_bucketing.constant_selector(weights, len(datasets)))
        return DatasetV1.choose_from_datasets(datasets, selector, stop_on_empty_dataset)

    @staticmethod
    def zip(datasets):
        """Elements of the datasets in `datasets` (a structure of datasets) side by side."""
        flat = structure.flatten(datasets)
        for d in flat:
            if not isinstance(d, DatasetV1):
                raise TypeError(f"The argument to `Dataset.zip()` must be a (nested) structure "
                                f"of `Dataset` objects, got {d!r}.")
        spec = structure.pack(datasets, [d.element_spec for d in flat])

        def make(*variants):
            return _ops.apply_op("ZipDataset", [list(variants)], {
                "output_types": structure.type_attrs(spec),
                "output_shapes": structure.shape_attrs(spec)}, name="ZipDataset").outputs[0]

        return DatasetV1(flat, spec, make)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None):
        """The elements `generator(*args)` yields, each converted to `output_types` (or
        `output_signature`'s TensorSpecs) and checked against the shapes. The generator runs in
        Python (through tf.py_func); each iterator (re)initialization calls generator again."""
        if output_signature is not None:
            if output_types is not None or output_shapes is not None:
                raise TypeError("`output_types` and `output_shapes` cannot be used together "
                                "with `output_signature`.")
            spec = structure.normalize(output_signature)
            for s in structure.flatten(spec):
                if not isinstance(s, structure.TensorSpec):
                    raise TypeError(f"Flowstone's from_generator takes TensorSpecs in "
                                    f"`output_signature`, got {s!r} (see docs/COMPAT.md); "
                                    f"yield its component tensors and build it in a map.")
        elif output_types is None:
            raise TypeError("Missing required argument: `output_signature` (or the deprecated "
                            "`output_types`).")
        else:
            spec = structure.spec_from_types(structure.normalize(output_types), output_shapes)
        return _generator_dataset(generator, spec, args)

    # --- transformations -------------------------------------------------------------------

    def apply(self, transformation_func):
        """transformation_func(self): a function from a dataset to a dataset."""
        dataset = transformation_func(self)
        if not isinstance(dataset, DatasetV1):
            raise TypeError(f"`transformation_func` must return a `tf.data.Dataset` object, got "
                            f"{type(dataset).__name__}.")
        return dataset

    def unbatch(self):
        """The rows of each element (along the first dimension) as elements."""
        specs = structure.flatten(self._element_spec)
        for s in specs:
            if s.shape.ndims == 0:
                raise ValueError("Cannot unbatch an input with scalar components.")
        spec = structure.unbatch_spec(self._element_spec)
        if not any(structure.is_composite(s) for s in specs):
            return self._unary("UnbatchDataset", [], spec=spec)
        # A composite's element encodes it whole; first re-encode it row by row, so that
        # UnbatchDataset slices it as any tensor (TensorFlow's normalize_to_dense).
        rows = self._reencoded(lambda element: structure.to_batched_tensor_list(
            self._element_spec, element))

        def make(variant):
            return _ops.apply_op("UnbatchDataset", [variant], self._spec_attrs(spec),
                                 name="UnbatchDataset").outputs[0]

        return DatasetV1([rows], spec, make)

    def _reencoded(self, to_tensor_list, spec=None):
        """This dataset's elements as the tensors `to_tensor_list(element)` gives (a map):
        elements of `spec` when those are its tensor lists, else plain tensors."""
        spec_in = self._element_spec
        state = {}

        def encode(*args):
            element = args if _is_plain_tuple(spec_in) else args[0]
            return tuple(to_tensor_list(element))

        def make(variant):
            name, captured, result = _trace(encode, spec_in, "Dataset_encode")
            state["spec"] = structure.spec_of(result)
            return _ops.apply_op("MapDataset", [variant, captured], dict(
                self._spec_attrs(state["spec"]), f=name, preserve_cardinality=True),
                name="MapDataset").outputs[0]

        if spec is None:
            return _LazySpecDataset([self], state, make)
        return DatasetV1([self], spec, make)

    def ragged_batch(self, batch_size, drop_remainder=False, row_splits_dtype=_dtypes.int64,
                     name=None):
        """Batches in which a component whose shape is not fully known becomes a
        RaggedTensor (its dimensions up to the last unknown one ragged); fully known
        components are stacked as batch() stacks them."""
        del name
        spec_in = self._element_spec
        leaves = structure.flatten(spec_in)
        ragged = [_ragged_spec_of(s, row_splits_dtype) for s in leaves]
        if ragged == leaves:
            return self.batch(batch_size, drop_remainder)
        spec = structure.pack(spec_in, ragged)

        def to_ragged(element):
            tensors = []
            for leaf, value in zip(ragged, structure.flatten_up_to(spec_in, element)):
                if isinstance(leaf, structure.RaggedTensorSpec) and leaf.ragged_rank > 0:
                    value = _ragged_tensor.RaggedTensor.from_tensor(
                        value, ragged_rank=leaf.ragged_rank, row_splits_dtype=row_splits_dtype)
                tensors.extend(leaf._to_tensor_list(value))
            return tensors

        return self._reencoded(to_ragged, spec).batch(batch_size, drop_remainder)

    def window(self, size, shift=None, stride=1, drop_remainder=False):
        """Windows of `size` elements (every `stride`-th), one starting every `shift` (default
        `size`) elements. Each element is a structure of datasets, one per component, as in TF:
        `ds.window(3).flat_map(lambda w: w.batch(3))`."""
        spec = structure.pack(self._element_spec, [
            structure.DatasetSpec(s) for s in structure.flatten(self._element_spec)])
        return self._unary("WindowDataset", [
            lambda: _int64(size, "size"), lambda: _int64(size if shift is None else shift, "shift"),
            lambda: _int64(stride, "stride"),
            lambda: _ops.convert_to_tensor(drop_remainder, dtype=_dtypes.bool,
                                           name="drop_remainder")], spec=spec)

    def ignore_errors(self):
        """The elements whose computation succeeded (failed ones are dropped)."""
        return self._unary("IgnoreErrorsDataset", [])

    def concatenate(self, dataset):
        a, b = structure.flatten(self._element_spec), structure.flatten(dataset.element_spec)
        if [_kind(s) for s in a] != [_kind(s) for s in b]:
            raise TypeError(f"Two datasets to concatenate have different types "
                            f"{self.output_types} and {dataset.output_types}")
        spec = structure.pack(self._element_spec, [_relaxed(x, y) for x, y in zip(a, b)])

        def make(first, second):
            return _ops.apply_op("ConcatenateDataset", [first, second], self._spec_attrs(spec),
                                 name="ConcatenateDataset").outputs[0]

        return DatasetV1([self, dataset], spec, make)

    def cache(self, filename=""):
        """The elements kept in memory after the first complete pass (filename "" only)."""
        return self._unary("CacheDataset", [
            lambda: _ops.convert_to_tensor(filename, dtype=_dtypes.string, name="filename")])

    def repeat(self, count=None):
        return self._unary("RepeatDataset", [lambda: _int64(-1 if count is None else count,
                                                            "count")])

    def take(self, count):
        return self._unary("TakeDataset", [lambda: _int64(count, "count")])

    def skip(self, count):
        return self._unary("SkipDataset", [lambda: _int64(count, "count")])

    def shard(self, num_shards, index):
        return self._unary("ShardDataset", [lambda: _int64(num_shards, "num_shards"),
                                            lambda: _int64(index, "index")])

    def prefetch(self, buffer_size):
        return self._unary("PrefetchDataset", [lambda: _int64(buffer_size, "buffer_size")])

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        seed, seed2 = random_ops.get_seed(seed)
        seed, seed2 = (0 if seed is None else seed), (0 if seed2 is None else seed2)
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return self._unary("ShuffleDataset", [lambda: _int64(buffer_size, "buffer_size"),
                                              lambda: _int64(seed, "seed"),
                                              lambda: _int64(seed2, "seed2")],
                           attrs={"reshuffle_each_iteration": reshuffle})

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None):
        """Consecutive elements stacked into batches (TF2's parallel batching arguments are
        accepted: the batches are the same)."""
        del num_parallel_calls, deterministic
        size = batch_size if isinstance(batch_size, int) and drop_remainder else None
        spec = structure.batch_spec(self._element_spec, size)
        return self._unary("BatchDatasetV2", [
            lambda: _int64(batch_size, "batch_size"),
            lambda: _ops.convert_to_tensor(drop_remainder, dtype=_dtypes.bool,
                                           name="drop_remainder")], spec=spec,
            name="BatchDatasetV2")

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False):
        """Batches whose components are padded to `padded_shapes` (None or -1 dimensions: the
        largest in the batch; a dimension may be a scalar int64 tensor) with `padding_values`
        (default 0, or b"" for strings)."""
        specs = structure.flatten(self._element_spec)
        for s in specs:
            if isinstance(s, structure.DatasetSpec):
                raise TypeError("`padded_batch` is not supported for datasets of datasets")
            if not isinstance(s, structure.TensorSpec):
                raise TypeError(f"`padded_batch` is only supported for datasets that produce "
                                f"tensor elements but type spec of elements in the input "
                                f"dataset is not a subclass of TensorSpec: `{s!r}`.")
        if padded_shapes is None:
            raw = shapes = [TensorShape([None] * s.shape.ndims) for s in specs]
        else:
            raw = structure.flatten_up_to(self._element_spec, padded_shapes)
            shapes = [TensorShape([None if isinstance(d, _ops.Tensor) else d for d in r])
                      if _has_tensor_dims(r) else TensorShape(r) for r in raw]
        if padding_values is None:
            values = [b"" if s.dtype == _dtypes.string else 0 for s in specs]
        else:
            values = structure.flatten_up_to(self._element_spec, padding_values)
        size = batch_size if isinstance(batch_size, int) and drop_remainder else None
        spec = structure.pack(self._element_spec, [
            structure.TensorSpec(TensorShape([size]).concatenate(shape), s.dtype)
            for s, shape in zip(specs, shapes)])

        def make(variant):
            padded = [_padded_shape_tensor(r, shape) for r, shape in zip(raw, shapes)]
            pads = [_ops.convert_to_tensor(v, dtype=s.dtype, name="padding_values")
                    for v, s in zip(values, specs)]
            return _ops.apply_op("PaddedBatchDatasetV2", [
                variant, _int64(batch_size, "batch_size"), padded, pads,
                _ops.convert_to_tensor(drop_remainder, dtype=_dtypes.bool,
                                       name="drop_remainder")],
                {"output_shapes": structure.shape_attrs(spec), "N": len(padded),
                 "Toutput_types": [s.dtype for s in specs]},
                name="PaddedBatchDatasetV2").outputs[0]

        return DatasetV1([self], spec, make)

    def enumerate(self, start=0):
        """(index, element) pairs, counting from `start`."""
        return DatasetV1.zip((DatasetV1.counter(start), self))

    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        return self._map(map_func, num_parallel_calls, deterministic, True)

    def _map(self, map_func, num_parallel_calls, deterministic, preserve_cardinality):
        """map; preserve_cardinality=False lets map_func end the dataset (OutOfRange), as
        from_generator's does, and leaves the cardinality unknown."""
        spec_in = self._element_spec
        state = {}

        def make(variant):
            name, captured, result = _trace(map_func, spec_in, "Dataset_map")
            state["spec"] = structure.spec_of(result)
            attrs = dict(self._spec_attrs(state["spec"]), f=name,
                         preserve_cardinality=preserve_cardinality)
            if num_parallel_calls is None:
                return _ops.apply_op("MapDataset", [variant, captured], attrs,
                                     name="MapDataset").outputs[0]
            attrs["deterministic"] = ("default" if deterministic is None else
                                      "true" if deterministic else "false")
            return _ops.apply_op("ParallelMapDatasetV2", [
                variant, captured, _int64(num_parallel_calls, "num_parallel_calls")], attrs,
                name="ParallelMapDatasetV2").outputs[0]

        return _LazySpecDataset([self], state, make)

    def _map_and_batch(self, map_func, batch_size, num_parallel_calls, drop_remainder):
        """tf.data.experimental.map_and_batch's dataset (dataset_experimental.py)."""
        spec_in = self._element_spec
        state = {}

        def make(variant):
            name, captured, result = _trace(map_func, spec_in, "Dataset_map")
            size = batch_size if isinstance(batch_size, int) and drop_remainder else None
            state["spec"] = structure.batch_spec(structure.spec_of(result), size)
            attrs = dict(self._spec_attrs(state["spec"]), f=name, preserve_cardinality=True)
            calls = batch_size if num_parallel_calls is None else num_parallel_calls
            return _ops.apply_op("MapAndBatchDataset", [
                variant, captured, _int64(batch_size, "batch_size"),
                _int64(calls, "num_parallel_calls"),
                _ops.convert_to_tensor(drop_remainder, dtype=_dtypes.bool,
                                       name="drop_remainder")], attrs,
                name="MapAndBatchDataset").outputs[0]

        return _LazySpecDataset([self], state, make)

    def filter(self, predicate):
        spec = self._element_spec

        def make(variant):
            name, captured, result = _trace(predicate, spec, "Dataset_filter")
            _check_predicate(result)
            return _ops.apply_op("FilterDataset", [variant, captured],
                                 dict(self._spec_attrs(), predicate=name),
                                 name="FilterDataset").outputs[0]

        return DatasetV1([self], spec, make)

    def take_while(self, predicate):
        """The elements until `predicate` (a function of an element to a scalar bool) first
        returns false."""
        spec = self._element_spec

        def make(variant):
            name, captured, result = _trace(predicate, spec, "Dataset_take_while")
            _check_predicate(result)
            return _ops.apply_op("TakeWhileDataset", [variant, captured],
                                 dict(self._spec_attrs(), predicate=name),
                                 name="TakeWhileDataset").outputs[0]

        return DatasetV1([self], spec, make)

    def scan(self, initial_state, scan_func):
        """The outputs of `scan_func(state, element) -> (new_state, output)`, the state starting
        at `initial_state` (a structure of tensors, as Dataset.reduce's)."""
        spec_in = self._element_spec
        state = {}

        def make(variant):
            initial = structure.to_tensors(structure.normalize(initial_state), "initial_state")
            state_spec = structure.spec_of(initial)
            for _ in range(2):
                name, captured, result = _trace(_scan_pair(scan_func), (state_spec, spec_in),
                                                "Dataset_scan")
                relaxed = _reduce_state_spec(state_spec, result[0])
                if relaxed == state_spec:
                    break
                state_spec = relaxed  # a state whose shape changes: trace again, relaxed
            state["spec"] = structure.spec_of(result[1])
            flat_state = structure.to_tensor_list(state_spec, initial)
            return _ops.apply_op("ScanDataset", [variant, flat_state, captured], dict(
                self._spec_attrs(state["spec"]), f=name, Tstate=[t.dtype for t in flat_state],
                preserve_cardinality=True), name="ScanDataset").outputs[0]

        return _LazySpecDataset([self], state, make)

    def group_by_window(self, key_func, reduce_func, window_size=None, window_size_func=None):
        """The datasets `reduce_func(key, window)` returns for each window of `window_size` (or
        `window_size_func(key)`) elements of one `key_func(element)` (a scalar int64) key; at
        the end, the partial windows in key order."""
        if (window_size is None) == (window_size_func is None):
            raise ValueError("Either the `window_size` argument or the `window_size_func` "
                             "argument must be specified.")
        if window_size is not None:
            def window_size_func(_):
                return _ops.convert_to_tensor(window_size, dtype=_dtypes.int64,
                                              name="window_size")
        spec_in = self._element_spec
        key_spec = structure.TensorSpec([], _dtypes.int64)
        state = {}

        def make(variant):
            key_name, key_captured, key = _trace(key_func, spec_in, "Dataset_group_by_window_key")
            _check_int64_scalar(key, "key_func")
            size_name, size_captured, size = _trace(window_size_func, key_spec,
                                                    "Dataset_group_by_window_size")
            _check_int64_scalar(size, "window_size_func")
            reduce_name, reduce_captured, _ = _trace(
                _returning_variant(reduce_func), (key_spec, structure.DatasetSpec(spec_in)),
                "Dataset_group_by_window_reduce")
            state["spec"] = _returned_dataset_spec.pop()
            return _ops.apply_op("GroupByWindowDataset", [
                variant, key_captured, reduce_captured, size_captured], dict(
                self._spec_attrs(state["spec"]), key_func=key_name, reduce_func=reduce_name,
                window_size_func=size_name,
                Tkey_func_other_arguments=[t.dtype for t in key_captured],
                Treduce_func_other_arguments=[t.dtype for t in reduce_captured],
                Twindow_size_func_other_arguments=[t.dtype for t in size_captured]),
                name="GroupByWindowDataset").outputs[0]

        return _LazySpecDataset([self], state, make)

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries,
                                  bucket_batch_sizes, padded_shapes=None, padding_values=None,
                                  pad_to_bucket_boundary=False, no_padding=False,
                                  drop_remainder=False):
        """Batches of elements of similar length: bucket i holds the lengths in
        [bucket_boundaries[i-1], bucket_boundaries[i]) and batches bucket_batch_sizes[i] of
        them, padded (group_by_window underneath, as TF builds it)."""
        if len(bucket_batch_sizes) != len(bucket_boundaries) + 1:
            raise ValueError(f"`len(bucket_batch_sizes)` must equal `len(bucket_boundaries) + "
                             f"1` but `len(bucket_batch_sizes)={len(bucket_batch_sizes)}` and "
                             f"`len(bucket_boundaries)={len(bucket_boundaries)}`.")
        window_size, batch = dataset_bucketing.batching_fn(
            bucket_boundaries, bucket_batch_sizes, padded_shapes, padding_values,
            pad_to_bucket_boundary, no_padding, drop_remainder)
        return self.group_by_window(
            dataset_bucketing.bucket_id_fn(element_length_func, bucket_boundaries), batch,
            window_size_func=window_size)

    def unique(self):
        """Each distinct element once, in the order first seen (elements of one int32, int64 or
        string component)."""
        flat = structure.flatten(self._element_spec)
        if len(flat) != 1 or flat[0].dtype not in (_dtypes.int32, _dtypes.int64,
                                                   _dtypes.string):
            raise TypeError(f"`tf.data.Dataset.unique` does not support type "
                            f"{self.output_types} -- only `tf.int32`, `tf.int64`, and "
                            f"`tf.string` are supported.")
        return self._unary("UniqueDataset", [])

    def flat_map(self, map_func):
        return self._interleave(map_func, None, None, "FlatMapDataset")

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None):
        del num_parallel_calls, deterministic  # runs in order, deterministically
        return self._interleave(map_func, AUTOTUNE if cycle_length is None else cycle_length,
                                1 if block_length is None else block_length,
                                "InterleaveDataset")

    def _interleave(self, map_func, cycle_length, block_length, op_type):
        spec_in = self._element_spec
        state = {}

        def make(variant):
            name, captured, _ = _trace(_returning_variant(map_func), spec_in,
                                       f"Dataset_{op_type}")
            state["spec"] = _returned_dataset_spec.pop()
            inputs = [variant, captured]
            if cycle_length is not None:
                inputs += [_int64(cycle_length, "cycle_length"),
                           _int64(block_length, "block_length")]
            return _ops.apply_op(op_type, inputs, dict(self._spec_attrs(state["spec"]), f=name),
                                 name=op_type).outputs[0]

        return _LazySpecDataset([self], state, make)

    def reduce(self, initial_state, reduce_func):
        """The state `reduce_func(state, element)` leaves after every element, starting from
        `initial_state` (one ReduceDataset op: the fold runs in C++)."""
        built = {}

        def build(variant):
            state = structure.to_tensors(structure.normalize(initial_state), "initial_state")
            spec = structure.spec_of(state)
            for _ in range(2):
                name, captured, result = _trace(reduce_func, (spec, self._element_spec),
                                                "Dataset_reduce")
                relaxed = _reduce_state_spec(spec, result)
                if relaxed == spec:
                    break
                spec = relaxed  # a state whose shape changes: trace again, relaxed
            types = structure.type_attrs(spec)
            built["spec"] = spec
            outputs = _ops.apply_op("ReduceDataset", [
                variant, structure.to_tensor_list(spec, state), captured], {
                "f": name, "Tstate": types, "Targuments": [t.dtype for t in captured],
                "output_types": types, "output_shapes": structure.shape_attrs(spec)},
                name="ReduceDataset").outputs
            return structure.to_components(spec, structure.from_tensor_list(spec, outputs))

        outputs = self._run_op(build)
        return structure.from_components(built["spec"], outputs)

    # --- the whole dataset at once ---------------------------------------------------------

    def cardinality(self):
        """The number of elements, as a scalar int64 tensor: tf.data.INFINITE_CARDINALITY when
        the dataset never ends, tf.data.UNKNOWN_CARDINALITY when only running it would tell (a
        filter, a file)."""
        return self._run_op(lambda variant: _ops.apply_op(
            "DatasetCardinality", [variant], name="DatasetCardinality").outputs[0])

    def get_single_element(self, name=None):
        """The one element of this dataset, as a structure of tensors; running it raises
        InvalidArgumentError when the dataset has no element or more than one."""
        spec = self._element_spec
        if any(isinstance(s, structure.DatasetSpec) for s in structure.flatten(spec)):
            raise TypeError("get_single_element does not support datasets whose elements "
                            "are datasets (windows); flat_map them first.")

        def build(variant):
            outputs = _ops.apply_op("DatasetToSingleElement", [variant], self._spec_attrs(),
                                    name=name or "DatasetToSingleElement").outputs
            return structure.to_components(spec, structure.from_tensor_list(spec, outputs))

        return structure.from_components(spec, self._run_op(build))

    def as_numpy_iterator(self):
        """An iterator over the elements as numpy values, in their structure (eager only)."""
        if not _ops.executing_eagerly():
            raise RuntimeError("`tf.data.Dataset.as_numpy_iterator()` is only supported in "
                               "eager mode.")
        for s in structure.flatten(self._element_spec):
            if not isinstance(s, (structure.TensorSpec, structure.SparseTensorSpec,
                                  structure.RaggedTensorSpec)):
                raise TypeError(f"`tf.data.Dataset.as_numpy_iterator()` is not supported for "
                                f"datasets that produce values of type {type(s).__name__}")
        return eager_iterator.NumpyIterator(self)

    def __len__(self):
        """The cardinality as an int while executing eagerly (TypeError when it is infinite or
        unknown), as TF2's len(dataset)."""
        if not _ops.executing_eagerly():
            raise TypeError("`tf.data.Dataset` only supports `len` in eager mode. Use "
                            "`tf.data.Dataset.cardinality()` instead.")
        length = int(self.cardinality().numpy())
        if length == INFINITE:
            raise TypeError("The dataset is infinite.")
        if length == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return length

    def __bool__(self):
        return True  # a dataset is true whatever its length (__len__ would decide otherwise)

    def _run_op(self, build):
        """`build(variant)` (a tensor or a list of them) over this dataset: in graph mode in the
        default graph; while executing eagerly, run at once into EagerTensors."""
        if _ops.executing_eagerly():
            return eager_iterator.run_once(self, build)
        return build(self._variant_in(_ops.get_default_graph()))

    # --- iterators -------------------------------------------------------------------------

    def with_options(self, options):
        """This dataset carrying `options` (tf.data.Options), merged over those it had."""
        from flowstone.ops.dataset_options import Options
        if not isinstance(options, Options):
            raise TypeError(f"options must be a tf.data.Options, got {type(options).__name__}")
        dataset = DatasetV1([self], self.element_spec, lambda variant: variant)
        dataset._own_options = options
        return dataset

    def options(self):
        """The options of this dataset and of those it is made from, merged (tf.data.Options)."""
        from flowstone.ops.dataset_options import Options
        merged = Options()
        for dataset in self._inputs:
            merged = merged.merge(dataset.options())
        own = getattr(self, "_own_options", None)
        return merged.merge(own) if own is not None else merged

    def make_one_shot_iterator(self):
        """An iterator that needs no initialization (the dataset may not use placeholders);
        while executing eagerly, the iterator `iter(dataset)` gives, as in TF."""
        if _ops.executing_eagerly():
            return eager_iterator.EagerIterator(self)
        return iterator_ops.make_one_shot(self)

    def make_initializable_iterator(self, shared_name=None):
        """An iterator started (and restarted) by running its `initializer`."""
        if _ops.executing_eagerly():
            raise RuntimeError("dataset.make_initializable_iterator is not supported when eager "
                               "execution is enabled. Use `for element in dataset` instead.")
        return iterator_ops.make_initializable(self, shared_name)

    def __iter__(self):
        if _ops.executing_eagerly():
            return eager_iterator.EagerIterator(self)
        raise RuntimeError("`tf.data.Dataset` only supports Python-style iteration in eager "
                           "mode or within tf.function; in graph mode use "
                           "make_one_shot_iterator() or make_initializable_iterator().")

    def __repr__(self):
        return f"<DatasetV1Adapter element_spec={self._element_spec!r}>"


class _VariantDataset(DatasetV1):
    """A dataset given by a variant tensor of a function body (a window passed to flat_map's
    function)."""

    def __init__(self, variant, element_spec):
        super().__init__([], element_spec, lambda: variant)


class _GeneratorState:
    """The running generators of one from_generator dataset, by iterator id: each
    (re)initialization starts a new one, StopIteration drops it."""

    def __init__(self, generator, spec):
        self._generator = generator
        self._spec = spec
        self._flat = structure.flatten(spec)
        self._running = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def start(self, *args):
        iterator = iter(self._generator(*args))
        with self._lock:
            gen_id = next(self._ids)
            self._running[gen_id] = iterator
        return np.int64(gen_id)

    def next(self, gen_id):
        iterator = self._running[int(gen_id)]
        try:
            value = next(iterator)
        except StopIteration:
            with self._lock:
                self._running.pop(int(gen_id), None)
            raise
        value = _tuples(self._spec, value)
        return [_generated_array(v, s) for v, s in zip(
            structure.flatten_up_to(self._spec, value), self._flat)]


def _tuples(spec, value):
    """`value` with lists read as tuples where `spec` nests a tuple (a generator may yield
    lists)."""
    if isinstance(spec, tuple) and isinstance(value, list):
        value = tuple(value)
    if isinstance(spec, tuple) and isinstance(value, tuple) and len(spec) == len(value):
        return tuple(_tuples(s, v) for s, v in zip(spec, value))
    if isinstance(spec, dict) and isinstance(value, dict):
        return {k: _tuples(spec[k], value[k]) if k in spec else value[k] for k in value}
    return value


def _generated_array(value, spec):
    if spec.dtype == _dtypes.string:
        array = np.asarray(value, dtype=object)
        array = np.frompyfunc(lambda x: x.encode() if isinstance(x, str) else x, 1, 1)(array)
        array = np.asarray(array, dtype=object)
    else:
        try:
            array = np.asarray(value, dtype=spec.dtype.as_numpy_dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"`generator` yielded an element that could not be converted to the "
                            f"expected type. The expected type was {spec.dtype.name}, but the "
                            f"yielded element was {value!r}.") from e
    if not spec.shape.is_compatible_with(array.shape):
        raise ValueError(f"`generator` yielded an element of shape {array.shape} where an "
                         f"element of shape {spec.shape} was expected.")
    return array


def _generator_dataset(generator, spec, args):
    state = _GeneratorState(generator, spec)
    flat = structure.flatten(spec)

    def start(_):
        inputs = [_ops.convert_to_tensor(a) for a in (args or ())]
        gen_id = script_ops.py_func(state.start, inputs, _dtypes.int64, name="generator_start")

        def next_element(gen_id):
            values = script_ops.py_func(state.next, [gen_id], [s.dtype for s in flat],
                                        name="generator_next")
            for value, s in zip(values, flat):
                value.set_shape(s.shape)
            return structure.pack(spec, values)

        return DatasetV1.from_tensors(gen_id).repeat()._map(next_element, None, None, False)

    return DatasetV1.from_tensors(np.int64(0)).flat_map(start)


class _LazySpecDataset(DatasetV1):
    """A dataset whose element spec is known once its function has been traced (map and the
    interleaves): the first build, in the default graph, fills `state["spec"]`."""

    def __init__(self, inputs, state, make):
        super().__init__(inputs, None, make)
        self._element_spec = state["spec"]


# list_files shuffles its names through a buffer this large (TF uses the number of files).
_LIST_FILES_SHUFFLE_BUFFER = 10000

# The spec of the dataset the traced interleave function returned (set while tracing).
_returned_dataset_spec = []


def _returning_variant(map_func):
    def call(*args):
        result = map_func(*args)
        if not isinstance(result, DatasetV1):
            raise TypeError(f"The function passed to flat_map/interleave must return a "
                            f"`tf.data.Dataset` object, got {type(result).__name__}.")
        _returned_dataset_spec.append(result.element_spec)
        return result._variant_in(_ops.get_default_graph())

    return call


def _check_int64_scalar(result, what):
    flat = structure.flatten(result)
    if len(flat) != 1 or flat[0].dtype != _dtypes.int64 or flat[0].shape.ndims not in (0, None):
        raise ValueError(f"Invalid `{what}`. `{what}` must return a single `tf.int64` scalar "
                         f"tensor but its return type is {structure.spec_of(result)}.")


def _common_spec(specs):
    """The element spec of datasets of `specs` chosen among: one structure and dtypes, shapes
    relaxed where they differ."""
    first = structure.flatten(specs[0])
    for spec in specs[1:]:
        flat = structure.flatten(spec)
        if len(flat) != len(first) or [_kind(s) for s in flat] != [_kind(s) for s in first]:
            raise TypeError(f"Incompatible dataset elements: the datasets to choose from must "
                            f"have the same structure and types, got {specs[0]} and {spec}.")
        first = [_relaxed(a, b) for a, b in zip(first, flat)]
    return structure.pack(specs[0], first)


def _has_tensor_dims(shape):
    return isinstance(shape, (list, tuple)) and any(isinstance(d, _ops.Tensor) for d in shape)


def _padded_shape_tensor(raw, shape):
    """A padded shape as PaddedBatchDatasetV2's int64 vector (-1: the longest in the batch):
    from `shape`, or stacked from `raw` where dimensions are tensors."""
    if not _has_tensor_dims(raw):
        return _ops.convert_to_tensor([-1 if d is None else d for d in shape.as_list()],
                                      dtype=_dtypes.int64, name="padded_shapes")
    dims = [_ops.convert_to_tensor(-1 if d is None else d, dtype=_dtypes.int64) for d in raw]
    return _ops.apply_op("Pack", [dims], {"axis": 0}, name="padded_shapes").outputs[0]


def _check_predicate(result):
    flat = structure.flatten(result)
    if len(flat) != 1 or flat[0].dtype != _dtypes.bool or flat[0].shape.ndims not in (0, None):
        raise ValueError(f"Invalid `predicate`. `predicate` must return a `tf.bool` scalar "
                         f"tensor, but its return type is {structure.spec_of(result)}.")


def _scan_pair(scan_func):
    """scan_func, checked to return (new_state, output) as TF requires."""
    def call(state, element):
        result = scan_func(state, element)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TypeError(f"Invalid `scan_func`. `scan_func` should return a pair consisting "
                            f"of new state and the output value but its return type is "
                            f"{structure.spec_of(structure.to_tensors(result))}.")
        return tuple(result)

    return call


def _reduce_state_spec(spec, result):
    """The state spec after one reduce step returned `result`: TypeError unless it matches the
    state's structure and dtypes; shapes that differ become unknown."""
    flat = structure.flatten(spec)
    try:
        got = structure.flatten_up_to(spec, structure.normalize(result))
    except (TypeError, ValueError, KeyError) as e:
        raise TypeError(f"The structure of the new state ({result!r}) must match the initial "
                        f"state's ({spec!r}).") from e
    if len(got) != len(flat):
        raise TypeError(f"The new state has {len(got)} components; the initial state has "
                        f"{len(flat)}.")
    got = [structure.type_spec_from_value(t) for t in got]
    for s, t in zip(flat, got):
        if t.dtype != s.dtype:
            raise TypeError(f"The element types for the new state must match the initial state. "
                            f"Expected {s.dtype}; got {t.dtype}.")
        if _kind(t) != _kind(s):
            raise TypeError(f"The new state's {t!r} does not match the initial state's {s!r}.")
    return structure.pack(spec, [_relaxed(s, t) for s, t in zip(flat, got)])


def _ragged_spec_of(spec, row_splits_dtype):
    """The spec ragged_batch batches a component of `spec` as: a RaggedTensorSpec whose ragged
    dimensions end at the last unknown one (TensorFlow's rule), unless the shape is fully known
    or the rank unknown."""
    if (not isinstance(spec, structure.TensorSpec) or spec.shape.ndims is None or
            spec.shape.is_fully_defined()):
        return spec
    ragged_rank = max(axis for axis, d in enumerate(spec.shape.as_list()) if d is None)
    return structure.RaggedTensorSpec(spec.shape, spec.dtype, ragged_rank, row_splits_dtype)


def _kind(spec):
    """What two specs must share to be relaxed into one: their class, dtype and (ragged)
    ragged_rank."""
    return (type(spec), spec.dtype, getattr(spec, "ragged_rank", None))


def _relaxed(a, b):
    """The spec both `a` and `b` (of one _kind) fit: dimensions that differ become unknown."""
    if isinstance(a, structure.TensorSpec):
        return structure.TensorSpec(most_specific_shape(a.shape, b.shape), a.dtype)
    return a.most_specific_compatible_type(b) if a != b else a


def _is_plain_tuple(value):
    return isinstance(value, tuple) and not hasattr(type(value), "_fields")
