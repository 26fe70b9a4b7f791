"""Reading import statements from a module's AST, for the layout tests
(test_imports, test_library_layout)."""

import ast


def imported_names(node, pkg):
    """The absolute dotted modules an import statement names, relative
    imports resolved against package `pkg`: ``import a.b`` names a.b;
    ``from ..x import y`` inside tvmd.ir.sub names tvmd.ir.x and
    tvmd.ir.x.y (y may be a module or a name in it).  [] for other nodes."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        parts = pkg.split(".")
        base = ".".join(parts[:len(parts) - (node.level - 1)])
        mod = f"{base}.{node.module}" if node.module else base
    else:
        mod = node.module or ""
    return [mod] + [f"{mod}.{a.name}" for a in node.names]
