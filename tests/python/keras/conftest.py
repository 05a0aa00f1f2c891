import pytest

import flowstone as tf


@pytest.fixture(autouse=True)
def fresh_keras_session():
    """Each Keras test starts with fresh layer names ('dense', 'dense_1') and no session."""
    tf.keras.backend.clear_session()
    yield
    tf.keras.backend.clear_session()
