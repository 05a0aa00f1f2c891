"""tf.test's test helpers: TestCase and the gradient checker (imported when first used)."""
