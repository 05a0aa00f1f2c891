"""The expression rewrites: operators whose Python meaning cannot take a tensor become calls of
the runtime operators (autograph/operators.py), which keep the Python meaning for Python values.

    a and b      ->  ag__.and_(lambda: a, lambda: b)     (b still evaluated only when needed)
    not a        ->  ag__.not_(a)
    a == b       ->  ag__.eq(a, b)       (a != b: ag__.not_eq)
    x if p else y -> ag__.if_exp(p, lambda: x, lambda: y)
    f(*a, **k)   ->  ag__.converted_call(f, (*a,), {**k})  (user functions converted when called;
                                                            print, len, range get tensor forms)
    l.append(v)  ->  l = ag__.list_append(l, v)  (as a statement: a TensorArray in a tensor loop)
    tf.autograph.experimental.set_loop_options(...) as a loop's statement -> the loop's options
"""

import ast

from flowstone.autograph import analysis

# Calls left alone: they read the calling frame (super, locals) or are the converter's own.
_UNCONVERTED_CALLS = {"super", "locals", "globals", "vars", "eval", "exec"}


def _ag(attr):
    return ast.Attribute(value=ast.Name(id="ag__", ctx=ast.Load()), attr=attr, ctx=ast.Load())


def _thunk(expr):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                         kw_defaults=[], kwarg=None, defaults=[]), body=expr)


def _call(attr, args, node):
    return ast.copy_location(ast.Call(func=_ag(attr), args=args, keywords=[]), node)


def is_loop_options_call(stmt):
    """Whether `stmt` is a `...set_loop_options(...)` call statement."""
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, (ast.Attribute, ast.Name))
            and getattr(stmt.value.func, "attr", getattr(stmt.value.func, "id", None))
            == "set_loop_options")


class ExpressionTransformer(ast.NodeTransformer):
    """Rewrites the expressions of one function (nested functions and lambdas included)."""

    def __init__(self, self_name):
        # The first parameter of a method: zero-argument super() needs it named.
        self._self_name = self_name
        self._locals = [set()]  # per function being visited: its parameters and assigned names

    def visit_FunctionDef(self, node):
        params = node.args.posonlyargs + node.args.args + node.args.kwonlyargs + \
            [a for a in (node.args.vararg, node.args.kwarg) if a is not None]
        self._locals.append({a.arg for a in params} | set(analysis.assigned_names(node.body)))
        try:
            return self.generic_visit(node)
        finally:
            self._locals.pop()

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        attr = "and_" if isinstance(node.op, ast.And) else "or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = _call(attr, [_thunk(value), _thunk(result)], node)
        return result

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _call("not_", [node.operand], node)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            return node
        attr = "eq" if isinstance(node.ops[0], ast.Eq) else "not_eq"
        return _call(attr, [node.left, node.comparators[0]], node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return _call("if_exp", [node.test, _thunk(node.body), _thunk(node.orelse)], node)

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id in _UNCONVERTED_CALLS:
            if func.id == "super" and not node.args and self._self_name:
                # Converted code is compiled outside its class: name super()'s arguments.
                node.args = [ast.Name(id="__class__", ctx=ast.Load()),
                             ast.Name(id=self._self_name, ctx=ast.Load())]
            return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == "ag__":
            return node
        args = ast.Tuple(elts=list(node.args), ctx=ast.Load())
        keys = [ast.Constant(value=k.arg) if k.arg is not None else None for k in node.keywords]
        kwargs = ast.Dict(keys=keys, values=[k.value for k in node.keywords])
        return ast.copy_location(ast.Call(func=_ag("converted_call"),
                                          args=[func, args, kwargs], keywords=[]), node)

    def visit_For(self, node):
        extra = getattr(node, "ag_extra_test", None)
        if extra is not None:
            node.ag_extra_test = self.visit(extra)
        return self.generic_visit(node)

    def visit_Expr(self, node):
        call = node.value
        if is_loop_options_call(node):
            # Left for the control-flow pass, which hands the options to the loop.
            call.args = [self.visit(a) for a in call.args]
            for k in call.keywords:
                k.value = self.visit(k.value)
            return node
        # Only a local list may be rebound (a global or closure one would become local).
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "append" and isinstance(call.func.value, ast.Name)
                and call.func.value.id in self._locals[-1]
                and len(call.args) == 1 and not call.keywords):
            target = call.func.value.id
            value = self.visit(call.args[0])
            assign = ast.Assign(targets=[ast.Name(id=target, ctx=ast.Store())],
                                value=_call("list_append",
                                            [ast.Name(id=target, ctx=ast.Load()), value], node))
            return ast.copy_location(assign, node)
        return self.generic_visit(node)
