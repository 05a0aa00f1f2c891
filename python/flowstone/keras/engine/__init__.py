"""Keras's engine: layers, nodes, functional and sequential models, and training."""
