"""`break`, `continue` and `return` inside control flow rewritten into flags, as AutoGraph does,
so that every `if` and loop left has one way in and one way out (what tf.cond and
tf.while_loop can express).

    while c:                      brk_1 = False
        if p:                     while not brk_1 and c:
            break                     if p:
        x = f(x)                          brk_1 = True
                                      else:
                                          x = f(x)

A `return` inside an `if` or a loop sets `do_return` and `retval_`; the statements after the
statement that may return run under `if not do_return:` (or, when one branch of an `if` always
returns, in the other branch), loops stop on `do_return`, and the function returns `retval_`
once, at its end. Every later pass sees plain `if`s and loops.
"""

import ast

_RETURN = "do_return"
_RETVAL = "retval_"


def _name(name, store=False):
    return ast.Name(id=name, ctx=ast.Store() if store else ast.Load())


def _assign(name, value):
    return ast.Assign(targets=[_name(name, store=True)], value=value)


def _not_any(flags):
    """`not f1 and not f2 ...` (the expression pass makes it lazy and tensor-aware)."""
    tests = [ast.UnaryOp(op=ast.Not(), operand=_name(f)) for f in flags]
    return tests[0] if len(tests) == 1 else ast.BoolOp(op=ast.And(), values=tests)


def _contains(stmts, kinds, into_loops):
    """Whether `stmts` hold a statement of `kinds`, not looking into nested functions (nor into
    loops unless `into_loops`: a break belongs to its own loop)."""
    def visit(node):
        if isinstance(node, kinds):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return False
        if isinstance(node, (ast.While, ast.For)) and not into_loops:
            return any(visit(s) for s in node.orelse)
        return any(visit(c) for c in ast.iter_child_nodes(node))
    return any(visit(s) for s in stmts)


def _always_jumps(stmts):
    """Whether the block always ends in break, continue or return."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Break, ast.Continue, ast.Return)):
        return True
    if isinstance(last, ast.If):
        return _always_jumps(last.body) and _always_jumps(last.orelse)
    return False


class _Lowering:
    def __init__(self, counter, lowering_returns):
        self._counter = counter
        # Returns are rewritten only in functions that return from inside a statement.
        self.lowering_returns = lowering_returns

    def _fresh(self, base):
        self._counter[0] += 1
        return f"{base}_{self._counter[0]}"

    def block(self, stmts, loop):
        """Lowers one block. `loop` is (break flag, continue flag) of the innermost loop
        whose body this block is in, or None."""
        out = []
        for i, stmt in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(stmt, ast.Return) and self.lowering_returns:
                value = stmt.value if stmt.value is not None else ast.Constant(value=None)
                out += [ast.copy_location(_assign(_RETURN, ast.Constant(value=True)), stmt),
                        ast.copy_location(_assign(_RETVAL, value), stmt)]
                return out
            if isinstance(stmt, ast.Break) and loop is not None:
                out.append(ast.copy_location(_assign(loop[0], ast.Constant(value=True)), stmt))
                return out
            if isinstance(stmt, ast.Continue) and loop is not None:
                out.append(ast.copy_location(_assign(loop[1], ast.Constant(value=True)), stmt))
                return out
            flags = self._flags_set(stmt, loop)
            if not flags:
                out.append(self._lower_inside(stmt, loop))
                continue
            if isinstance(stmt, ast.If) and rest:
                # The rest of the block goes into the branch that does not jump, when the other
                # always does: no flag test, and no branch left without a value.
                body_jumps, else_jumps = _always_jumps(stmt.body), _always_jumps(stmt.orelse)
                if body_jumps and not else_jumps:
                    stmt.orelse, rest = stmt.orelse + rest, []
                elif else_jumps and not body_jumps:
                    stmt.body, rest = stmt.body + rest, []
                elif body_jumps and else_jumps:
                    rest = []
            out.append(self._lower_inside(stmt, loop))
            if rest:
                guard = ast.If(test=_not_any(flags), body=self.block(rest, loop), orelse=[])
                out.append(ast.copy_location(guard, rest[0]))
            return out
        return out

    def _flags_set(self, stmt, loop):
        flags = []
        if self.lowering_returns and _contains([stmt], ast.Return, into_loops=True):
            flags.append(_RETURN)
        if loop is not None and not isinstance(stmt, (ast.While, ast.For)):
            if _contains([stmt], ast.Break, into_loops=False):
                flags.append(loop[0])
            if _contains([stmt], ast.Continue, into_loops=False):
                flags.append(loop[1])
        return flags

    def _lower_inside(self, stmt, loop):
        if isinstance(stmt, ast.If):
            stmt.body = self.block(stmt.body, loop) or [ast.Pass()]
            stmt.orelse = self.block(stmt.orelse, loop)
        elif isinstance(stmt, (ast.While, ast.For)):
            return self._loop(stmt, loop)
        elif isinstance(stmt, ast.With):
            stmt.body = self.block(stmt.body, loop)
        elif isinstance(stmt, ast.Try):
            stmt.body = self.block(stmt.body, loop) or [ast.Pass()]
            for handler in stmt.handlers:
                handler.body = self.block(handler.body, loop) or [ast.Pass()]
            stmt.orelse = self.block(stmt.orelse, loop)
            stmt.finalbody = self.block(stmt.finalbody, loop)
        elif isinstance(stmt, ast.FunctionDef):
            lower_function(stmt, self._counter)
        return stmt

    def _loop(self, stmt, outer_loop):
        brk, cont = self._fresh("brk"), self._fresh("cont")
        has_break = _contains(stmt.body, ast.Break, into_loops=False)
        has_continue = _contains(stmt.body, ast.Continue, into_loops=False)
        has_return = self.lowering_returns and _contains(stmt.body, ast.Return, into_loops=True)
        body = self.block(stmt.body, (brk, cont))
        if has_continue:
            body = [ast.copy_location(_assign(cont, ast.Constant(value=False)), stmt)] + body
        stmt.body = body or [ast.Pass()]
        stop_flags = ([brk] if has_break else []) + ([_RETURN] if has_return else [])
        if stop_flags:
            extra = _not_any(stop_flags)
            if isinstance(stmt, ast.While):
                stmt.test = ast.BoolOp(op=ast.And(), values=[extra, stmt.test])
            else:
                stmt.ag_extra_test = extra  # read by the control-flow pass
        before = []
        if has_break:
            before.append(ast.copy_location(_assign(brk, ast.Constant(value=False)), stmt))
        after = []
        orelse = self.block(stmt.orelse, outer_loop)
        stmt.orelse = []
        if orelse:
            # A loop's `else` runs when the loop ends without a break (or a return).
            after = ([ast.copy_location(ast.If(test=_not_any(stop_flags), body=orelse,
                                               orelse=[]), orelse[0])]
                     if stop_flags else orelse)
        if not before and not after:
            return stmt
        spliced = ast.If(test=ast.Constant(value=True), body=before + [stmt] + after, orelse=[])
        spliced.ag_splice = True
        return ast.copy_location(spliced, stmt)


def _splice(stmts):
    """Splices the blocks `_loop` made to return several statements as one."""
    out = []
    for stmt in stmts:
        for block in ("body", "orelse"):
            if isinstance(getattr(stmt, block, None), list):
                setattr(stmt, block, _splice(getattr(stmt, block)))
        if getattr(stmt, "ag_splice", False):
            out.extend(stmt.body)
        else:
            out.append(stmt)
    return out


def lower_function(func, counter=None):
    """Lowers the jumps of `func` (an ast.FunctionDef) in place. Returns are rewritten only when
    one sits inside an `if`, a loop, a `with` or a `try`."""
    nested_return = any(_contains([s], ast.Return, into_loops=True) for s in func.body
                        if not isinstance(s, ast.Return))
    lowering = _Lowering(counter if counter is not None else [0], nested_return)
    body = lowering.block(func.body, None)
    if nested_return:
        body = ([_assign(_RETURN, ast.Constant(value=False)),
                 _assign(_RETVAL, ast.Call(func=ast.Attribute(
                     value=_name("ag__"), attr="UndefinedReturnValue", ctx=ast.Load()),
                     args=[], keywords=[]))]
                + body +
                [ast.Return(value=ast.Call(func=ast.Attribute(
                    value=_name("ag__"), attr="retval", ctx=ast.Load()),
                    args=[_name(_RETVAL)], keywords=[]))])
    func.body = _splice(body)
