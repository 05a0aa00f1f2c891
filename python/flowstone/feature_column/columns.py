"""The base of the feature columns: what each raw feature becomes. A dense column gives a float
[batch, n] tensor (`dense`); a categorical column gives int64 ids as a [batch, k] SparseTensor,
and optionally weights (`sparse_ids`). The columns themselves are in numeric.py, categorical.py
and embedding.py; names, defaults, values and errors follow TensorFlow 1.15's feature columns,
and tests compare them with real TensorFlow's tf.compat.v1.feature_column."""

import collections

import flowstone as tf

IdsAndWeights = collections.namedtuple("IdsAndWeights", ["id_tensor", "weight_tensor"])


class FeatureColumn:
    """A column; subclasses are dense, categorical or both. `name` orders columns in layers and
    names their variable scopes (`var_scope_name`, where a column differs)."""

    var_scope_name = property(lambda self: self.name)

    @property
    def name(self):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r})"


class DenseColumn(FeatureColumn):
    """A column whose value is a float [batch, variable_size] tensor."""

    variable_size = None  # the number of floats per example

    def dense(self, cache):
        raise NotImplementedError


class CategoricalColumn(FeatureColumn):
    """A column whose value is ids in [0, num_buckets) (negative ids are dropped later)."""

    num_buckets = None

    def sparse_ids(self, cache):
        raise NotImplementedError


class TransformCache:
    """The raw features and each column's transformed value, computed once per layer call."""

    def __init__(self, features):
        if not isinstance(features, dict):
            raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                             f"{type(features)}")
        self._features = features
        self._values = {}

    def raw(self, key):
        """The feature `key` as a tensor (a SparseTensor stays one); rank 1 becomes [batch, 1]."""
        if key not in self._features:
            raise ValueError(f"The feature {key!r} is not in the features dictionary (keys: "
                             f"{sorted(self._features)}).")
        value = self._features[key]
        if isinstance(value, tf.SparseTensor):
            return value
        value = tf.convert_to_tensor(value)
        if value.shape.ndims == 0:
            raise ValueError(f"Feature (key: {key}) cannot have rank 0. Given: {value}")
        if value.shape.ndims == 1:
            value = tf.expand_dims(value, -1)
        return value

    def get(self, column, make):
        if column not in self._values:
            self._values[column] = make()
        return self._values[column]
