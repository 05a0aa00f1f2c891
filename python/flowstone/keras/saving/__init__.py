"""Saving models and weights: Keras 2's HDF5 layout and the TF checkpoint format."""
