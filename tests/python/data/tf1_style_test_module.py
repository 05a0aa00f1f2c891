"""A TensorFlow 1 test file, as users write them: it runs unchanged under real TensorFlow and
under Flowstone (test_tf_test.py runs it with each, naming the module in TF_MODULE)."""

import importlib
import os

import numpy as np

tf = importlib.import_module(os.environ.get("TF_MODULE", "flowstone"))
if hasattr(tf, "compat") and os.environ.get("TF_MODULE") == "tensorflow":
    tf = tf.compat.v1
    tf.disable_eager_execution()


class MatmulTest(tf.test.TestCase):

    def test_matmul_and_evaluate(self):
        a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        with self.cached_session():
            got = self.evaluate(tf.matmul(a, a))
        self.assertAllClose(got, [[7.0, 10.0], [15.0, 22.0]])
        self.assertAllEqual(tf.shape(a).eval(session=tf.Session()), [2, 2])

    def test_each_test_starts_from_an_empty_graph(self):
        self.assertEqual(len(tf.get_default_graph().get_operations()), 0)
        tf.constant(1.0)

    def test_nested_structures(self):
        with self.session() as sess:
            got = sess.run({"x": tf.constant([1.0, 2.0]), "pair": (tf.constant(3), tf.constant(4.0))})
        self.assertAllClose(got, {"x": [1.0, 2.0 + 1e-8], "pair": (3, 4.0)})

    def test_op_errors(self):
        x = tf.placeholder(tf.float32, [2])
        with self.session() as sess:
            with self.assertRaisesOpError("must feed a value for placeholder"):
                sess.run(x * 2.0)

    def test_gradient_checker(self):
        x = tf.placeholder(tf.float64, [3])
        y = tf.reduce_sum(tf.sin(x) * x)
        with self.session():
            error = tf.test.compute_gradient_error(x, [3], y, [], x_init_value=np.array([0.1, 0.5, 1.0]))
        self.assertLess(error, 1e-6)

    def test_bounds_and_sets(self):
        values = tf.constant([0.5, 1.0, 2.0])
        with self.cached_session():
            self.assertAllInRange(values, 0.5, 2.0)
            self.assertAllGreater(values, 0.1)
            self.assertAllInSet(tf.constant([1, 2, 1]), {1, 2})
            self.assertNear(1.0, 1.05, 0.1)
            self.assertDTypeEqual(self.evaluate(values), np.float32)

    def test_temp_dir(self):
        path = os.path.join(self.get_temp_dir(), "f.txt")
        with open(path, "w") as f:
            f.write("x")
        self.assertTrue(os.path.isdir(self.get_temp_dir()))


if __name__ == "__main__":
    tf.test.main()
