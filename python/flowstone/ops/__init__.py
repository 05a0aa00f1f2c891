"""Python wrappers of the C++ ops, one module per op family."""
