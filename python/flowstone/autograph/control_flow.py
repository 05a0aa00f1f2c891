"""The statement rewrite: each `if`, `while` and `for` becomes functions over its state and one
call of a runtime operator, which runs them as Python control flow or builds tf.cond /
tf.while_loop, as the condition's type says.

    if x > 0:                       def ag__if_true_1(y):
        y = x                           y = x
    else:                               return (y,)
        y = -x                      def ag__if_false_1(y):
                                        y = -x
                                        return (y,)
                                    (y,) = ag__.if_stmt(x > 0, ag__if_true_1, ag__if_false_1,
                                                        (ag__.ld(locals(), 'y'),), ('y',))

The state of a statement is the names it assigns that are read later (an `if`'s outputs) or,
for a loop, also read by the next iteration (its loop variables): the names the user assigns,
deduced from the code, as TensorFlow's AutoGraph deduces them. Runs after jumps.py (no break,
continue or nested return is left) and expressions.py.
"""

import ast

from flowstone.autograph import analysis
from flowstone.autograph.expressions import is_loop_options_call


def _ag(attr):
    return ast.Attribute(value=ast.Name(id="ag__", ctx=ast.Load()), attr=attr, ctx=ast.Load())


def _names_tuple(names, ctx):
    return ast.Tuple(elts=[ast.Name(id=n, ctx=ctx()) for n in names], ctx=ctx())


def _strings(names):
    return ast.Tuple(elts=[ast.Constant(value=n) for n in names], ctx=ast.Load())


def _current_values(names):
    """(ag__.ld(locals(), 'a'), ...): each name's value, or Undefined where it has none yet."""
    locals_call = ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[])
    return ast.Tuple(elts=[ast.Call(func=_ag("ld"), args=[locals_call, ast.Constant(value=n)],
                                    keywords=[]) for n in names], ctx=ast.Load())


def _arguments(params):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


class ControlFlowTransformer(ast.NodeTransformer):
    def __init__(self):
        self._counter = 0
        self._outer = [({}, set())]  # per function: global/nonlocal names, and its own

    def _fresh(self):
        self._counter += 1
        return self._counter

    def _function(self, name, params, body, returns):
        """A generated function: `params` in, `body`, then `returns` out as a tuple."""
        declared = self._outer[-1][0]
        decls = []
        assigned = set(analysis.assigned_names(body))
        for kind, cls in (("global", ast.Global), ("nonlocal", ast.Nonlocal)):
            names = sorted(n for n, k in declared.items() if k == kind and n in assigned)
            if names:
                decls.append(cls(names=names))
        body = decls + list(body)
        if returns is not None:
            body.append(ast.Return(value=_names_tuple(returns, ast.Load)))
        body = body or [ast.Pass()]
        return ast.FunctionDef(name=name, args=_arguments(params), body=body,
                               decorator_list=[], returns=None, type_comment=None)

    def _state(self, names, keep):
        declared = self._outer[-1][0]
        return [n for n in names if n in keep and n not in declared]

    def visit_FunctionDef(self, node):
        declared = dict(self._outer[-1][0]) if len(self._outer) > 1 else {}
        for stmt in ast.walk(node):
            if isinstance(stmt, ast.Global):
                declared.update({n: "global" for n in stmt.names})
            elif isinstance(stmt, ast.Nonlocal):
                declared.update({n: "nonlocal" for n in stmt.names})
        self._outer.append((declared, None))
        try:
            return self.generic_visit(node)
        finally:
            self._outer.pop()

    def _assign_state(self, state, call, node):
        if state:
            stmt = ast.Assign(targets=[_names_tuple(state, ast.Store)], value=call)
        else:
            stmt = ast.Expr(value=call)
        return ast.copy_location(stmt, node)

    def visit_If(self, node):
        blocks = node.body + node.orelse
        modified = analysis.assigned_names(blocks)
        keep = node.ag_live_out | analysis.read_before_assigned(node.body) | \
            analysis.read_before_assigned(node.orelse)
        state = self._state(modified, keep)
        self.generic_visit(node)
        n = self._fresh()
        true_fn = self._function(f"ag__if_true_{n}", state, node.body, state)
        false_fn = self._function(f"ag__if_false_{n}", state, node.orelse, state)
        call = ast.Call(func=_ag("if_stmt"), args=[
            node.test, ast.Name(id=true_fn.name, ctx=ast.Load()),
            ast.Name(id=false_fn.name, ctx=ast.Load()), _current_values(state),
            _strings(state)], keywords=[])
        out = [ast.copy_location(true_fn, node), ast.copy_location(false_fn, node),
               self._assign_state(state, call, node)]
        return out

    def _loop_options(self, node):
        """Takes the loop's set_loop_options(...) statements out of its body, as a dict
        expression (shape invariants name their variables by string)."""
        keys, values = [], []
        body = []
        for stmt in node.body:
            if not is_loop_options_call(stmt):
                body.append(stmt)
                continue
            for k in stmt.value.keywords:
                value = k.value
                if k.arg == "shape_invariants" and isinstance(value, (ast.List, ast.Tuple)):
                    for pair in value.elts:
                        if isinstance(pair, ast.Tuple) and isinstance(pair.elts[0], ast.Name):
                            pair.elts[0] = ast.Constant(value=pair.elts[0].id)
                keys.append(ast.Constant(value=k.arg))
                values.append(value)
        node.body = body or [ast.Pass()]
        return ast.Dict(keys=keys, values=values)

    def visit_While(self, node):
        opts = self._loop_options(node)
        modified = analysis.assigned_names(node.body)
        keep = node.ag_live_out | analysis.read_before_assigned(node.body) | \
            analysis.read_names([node.test])
        state = self._state(modified, keep)
        self.generic_visit(node)
        n = self._fresh()
        test_fn = self._function(f"ag__loop_test_{n}", state,
                                 [ast.Return(value=node.test)], None)
        body_fn = self._function(f"ag__loop_body_{n}", state, node.body, state)
        call = ast.Call(func=_ag("while_stmt"), args=[
            ast.Name(id=test_fn.name, ctx=ast.Load()), ast.Name(id=body_fn.name, ctx=ast.Load()),
            _current_values(state), _strings(state), opts], keywords=[])
        return [ast.copy_location(test_fn, node), ast.copy_location(body_fn, node),
                self._assign_state(state, call, node)] + node.orelse

    def visit_For(self, node):
        opts = self._loop_options(node)
        targets = analysis.assigned_names([ast.Assign(targets=[node.target], value=None)])
        extra = getattr(node, "ag_extra_test", None)
        modified = list(dict.fromkeys(targets + analysis.assigned_names(node.body)))
        keep = analysis.read_before_assigned(node.body, defined=targets) | \
            analysis.read_names([extra] if extra is not None else [])
        keep = (keep - set(targets)) | node.ag_live_out
        state = self._state(modified, keep)
        self.generic_visit(node)
        n = self._fresh()
        item = f"ag__item_{n}"
        bind = ast.copy_location(ast.Assign(targets=[node.target],
                                            value=ast.Name(id=item, ctx=ast.Load())), node)
        body_fn = self._function(f"ag__loop_body_{n}", [item] + state, [bind] + node.body,
                                 state)
        out = [ast.copy_location(body_fn, node)]
        extra_arg = ast.Constant(value=None)
        if extra is not None:
            test_fn = self._function(f"ag__extra_test_{n}", state, [ast.Return(value=extra)],
                                     None)
            out.insert(0, ast.copy_location(test_fn, node))
            extra_arg = ast.Name(id=test_fn.name, ctx=ast.Load())
        call = ast.Call(func=_ag("for_stmt"), args=[
            node.iter, extra_arg, ast.Name(id=body_fn.name, ctx=ast.Load()),
            _current_values(state), _strings(state), opts], keywords=[])
        return out + [self._assign_state(state, call, node)] + node.orelse
