"""Which names a piece of a function's AST reads and assigns, and which are live after each
statement: what decides the state a converted `if` or loop passes through its functions."""

import ast

# Names made by the converter itself: never state (they are functions defined and called once).
GENERATED_PREFIX = "ag__"


def _is_scope(node):
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))


def assigned_names(nodes):
    """Names bound by `nodes` (statements) in the function they belong to, in first-bound order:
    assignment targets, loop targets, `with ... as`, `except ... as`, imports and the names of
    nested defs and classes (whose bodies are their own scopes)."""
    found = {}

    def add(name):
        if not name.startswith(GENERATED_PREFIX):
            found.setdefault(name, None)

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name)
            for d in node.decorator_list:
                visit(d)
            return
        if _is_scope(node):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            add(node.id)
        elif isinstance(node, ast.NamedExpr):
            add(node.target.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                add((alias.asname or alias.name).split(".")[0])
        for child in ast.iter_child_nodes(node):
            visit(child)

    for n in nodes:
        visit(n)
    return list(found)


def read_names(nodes):
    """Every name `nodes` may read, nested functions and lambdas included (a closure defined
    here reads its free names later)."""
    found = set()
    for n in nodes:
        for node in ast.walk(n):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                found.add(node.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                found.add(node.target.id)
    return found


def declared_outer(func):
    """Names `func` declares `global` or `nonlocal` (never state: they live outside it)."""
    found = set()

    def visit(node):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(node.names)
        for child in ast.iter_child_nodes(node):
            if not _is_scope(child):
                visit(child)

    for stmt in func.body:
        visit(stmt)
    return found


def annotate_liveness(stmts, live_out):
    """Sets `ag_live_out` on every statement of `stmts` (recursively): the names that may be read
    after it runs. Conservative: any later read counts, and inside a loop every read of the loop
    counts (the next iteration runs it)."""
    live = set(live_out)
    for stmt in reversed(stmts):
        stmt.ag_live_out = set(live)
        if isinstance(stmt, (ast.While, ast.For)):
            extra = getattr(stmt, "ag_extra_test", None)  # jumps.py's stop test of a for loop
            annotate_liveness(stmt.body, live | read_names([stmt] + ([extra] if extra else [])))
            annotate_liveness(stmt.orelse, live)
        elif isinstance(stmt, ast.If):
            annotate_liveness(stmt.body, live)
            annotate_liveness(stmt.orelse, live)
        elif isinstance(stmt, (ast.With, ast.Try)):
            for block in ("body", "orelse", "finalbody"):
                annotate_liveness(getattr(stmt, block, []), live)
            for handler in getattr(stmt, "handlers", []):
                annotate_liveness(handler.body, live)
        elif isinstance(stmt, ast.FunctionDef):
            annotate_liveness(stmt.body, set())
        live |= read_names([stmt])


def read_before_assigned(stmts, defined=()):
    """Names `stmts` may read before assigning them in the same pass: for a loop body, the
    values one iteration carries to the next."""
    defined = set(defined)
    carried = set()
    for stmt in stmts:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr, ast.AugAssign, ast.Return)):
            value = getattr(stmt, "value", None)
            carried |= read_names([value] if value is not None else []) - defined
            if isinstance(stmt, ast.AugAssign):
                carried |= read_names([stmt.target]) - defined
            targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
            carried |= read_names([t for t in targets if t is not None]) - defined
            defined |= set(assigned_names([stmt]))
        else:
            carried |= read_names([stmt]) - defined
    return carried
