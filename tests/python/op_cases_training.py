"""Optimizer update ops: they update resource variables in place and have no outputs to compare,
so their formulas are tested by running them on variables (tests/python/test_update_rules.py)."""

EXEMPT = {
    op: "tests/python/test_update_rules.py (each rule against its numpy formula)"
    for op in ["ResourceApplyAdadelta", "ResourceApplyAdaMax",
               "ResourceApplyProximalGradientDescent", "ResourceApplyProximalAdagrad",
               "ResourceApplyAdagradDA", "ResourceApplyFtrl", "ResourceApplyFtrlV2",
               "ResourceApplyAddSign", "ResourceApplyPowerSign",
               "ResourceSparseApplyAdadelta", "ResourceSparseApplyProximalGradientDescent",
               "ResourceSparseApplyProximalAdagrad", "ResourceSparseApplyAdagradDA",
               "ResourceSparseApplyFtrl", "ResourceSparseApplyFtrlV2"]
}
