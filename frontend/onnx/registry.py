"""The converter registry: one converter per ONNX op type, versioned.

    @converter("Softmax", 1)          # opsets 1..12: coerce to 2-d at `axis`
    def softmax_v1(cx, node): ...

    @converter("Softmax", 13)         # opset 13 on: along one axis
    def softmax_v13(cx, node): ...

A node is converted by the implementation with the highest version that is
not newer than the version of the op's schema the model's opset selects
(``onnx.defs.get_schema(op, opset).since_version``), as TVM's
``_impl_vN`` dispatch did.  Registering one function for several op types
(``@converter(("Add", "Sub"), 7)``) is how families share code.
"""

from __future__ import annotations

# (domain, op_type) -> [(since_version, fn)], sorted by version
_CONVERTERS: dict[tuple[str, str], list] = {}
_LOADED = False

DEFAULT_DOMAIN = ""


def normalize_domain(domain: str) -> str:
    return DEFAULT_DOMAIN if domain in ("", "ai.onnx") else domain


def converter(op_types, since: int = 1, domain: str = DEFAULT_DOMAIN):
    """Register the decorated ``fn(cx, node)`` for `op_types` from version
    `since` of their schema on."""
    if isinstance(op_types, str):
        op_types = (op_types,)

    def deco(fn):
        for op in op_types:
            impls = _CONVERTERS.setdefault((normalize_domain(domain), op), [])
            impls.append((since, fn))
            impls.sort(key=lambda p: p[0])
        return fn
    return deco


def _load():
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from . import converters  # noqa: F401  (registers everything)


def has_converter(domain: str, op_type: str) -> bool:
    _load()
    return (normalize_domain(domain), op_type) in _CONVERTERS


def lookup(domain: str, op_type: str, version: int):
    """The implementation for schema `version` of the op, or None when the
    op has no converter or none as old as `version`."""
    _load()
    impls = _CONVERTERS.get((normalize_domain(domain), op_type))
    if not impls:
        return None
    best = None
    for since, fn in impls:
        if since <= version:
            best = fn
    return best


def supported_ops(domain: str = DEFAULT_DOMAIN) -> dict[str, list[int]]:
    """op type -> the schema versions its converters start at."""
    _load()
    d = normalize_domain(domain)
    return {op: [v for v, _ in impls] for (dom, op), impls in sorted(_CONVERTERS.items()) if dom == d}
