"""Match expressions, version 1: the persisted JSON a wait-for-event row carries.

    {"version": 1, "expr": NODE}
    NODE = {"kind": "and", "nodes": [NODE...]} | {"kind": "or", "nodes": [NODE...]}
         | {"kind": "atom", "path": [segment...], "op": OP}
    OP   = {"op": "eq"|"ne"|"gt"|"gte"|"lt"|"lte", "value": v} | {"op": "in", "values": [v...]}

Equality is strict (JavaScript `===` on JSON values: no 1 == True, objects and
lists never equal); ordered comparisons hold only number-number or
string-string. A missing path segment yields `undefined`, which equals nothing.
An unknown kind, op or version raises MatchError.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

VERSION = 1


class MatchError(ValueError):
    """The expression cannot be evaluated (corrupt, unknown kind or version)."""


class _Undefined:
    def __repr__(self) -> str:
        return "undefined"


UNDEFINED: Any = _Undefined()
Node = dict[str, Any]


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def strict_equal(a: Any, b: Any) -> bool:
    if a is UNDEFINED or b is UNDEFINED:
        return a is b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, bool) and isinstance(b, bool):
        return a is b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return a is None and b is None


def _ordered(a: Any, b: Any) -> bool:
    return (_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str))


def resolve_path(payload: Any, path: Sequence[Any]) -> Any:
    value = payload
    for seg in path:
        if isinstance(value, dict) and isinstance(seg, str) and seg in value:
            value = value[seg]
        elif isinstance(value, list) and (
            (isinstance(seg, int) and not isinstance(seg, bool))
            or (isinstance(seg, str) and seg.isdigit())
        ):
            idx = int(seg)
            if idx >= len(value):
                return UNDEFINED
            value = value[idx]
        else:
            return UNDEFINED
    return value


def _op(op: Any, actual: Any) -> bool:
    if not isinstance(op, dict):
        raise MatchError("atom op must be an object")
    kind = op.get("op")
    if kind == "in":
        values = op.get("values")
        if not isinstance(values, list):
            raise MatchError("op 'in' needs a 'values' list")
        return any(strict_equal(actual, v) for v in values)
    if "value" not in op and kind in ("eq", "ne", "gt", "gte", "lt", "lte"):
        raise MatchError(f"op {kind!r} needs a 'value'")
    expected = op.get("value")
    if kind == "eq":
        return strict_equal(actual, expected)
    if kind == "ne":
        return not strict_equal(actual, expected)
    if kind in ("gt", "gte", "lt", "lte"):
        if not _ordered(actual, expected):
            return False
        if kind == "gt":
            return bool(actual > expected)
        if kind == "gte":
            return bool(actual >= expected)
        if kind == "lt":
            return bool(actual < expected)
        return bool(actual <= expected)
    raise MatchError(f"unknown op {kind!r}")


def _node(node: Any, payload: Any) -> bool:
    if not isinstance(node, dict):
        raise MatchError("expression node must be an object")
    kind = node.get("kind")
    if kind in ("and", "or"):
        nodes = node.get("nodes")
        if not isinstance(nodes, list):
            raise MatchError(f"{kind!r} node needs a 'nodes' list")
        # Evaluate every child so a corrupt node is an error, not silently skipped.
        results = [_node(n, payload) for n in nodes]
        return all(results) if kind == "and" else any(results)
    if kind == "atom":
        path = node.get("path")
        if not isinstance(path, list) or not all(isinstance(s, str | int) for s in path):
            raise MatchError("atom needs a 'path' list of segments")
        return _op(node.get("op"), resolve_path(payload, path))
    raise MatchError(f"unknown node kind {kind!r}")


def evaluate(expr: Any, payload: Any) -> bool:
    """True when `payload` satisfies the persisted expression `expr` (None = match)."""
    if expr is None:
        return True
    if not isinstance(expr, dict):
        raise MatchError("match expression must be an object")
    if expr.get("version") != VERSION:
        raise MatchError(f"unknown match expression version {expr.get('version')!r}")
    return _node(expr.get("expr"), payload)


def persist(node_or_expr: Node) -> Node:
    """Wrap a node built with the helpers below as a versioned expression."""
    if "version" in node_or_expr:
        evaluate(node_or_expr, {})  # validates the shape early
        return node_or_expr
    expr = {"version": VERSION, "expr": node_or_expr}
    evaluate(expr, {})
    return expr


# -- builders: so users need not write the JSON by hand ----------------------


def _path(path: str | Sequence[str | int]) -> list[str | int]:
    if isinstance(path, str):
        return list[str | int](path.split("."))
    return list(path)


def _atom(path: str | Sequence[str | int], op: dict[str, Any]) -> Node:
    return {"kind": "atom", "path": _path(path), "op": op}


def eq(path: str | Sequence[str | int], value: Any) -> Node:
    return _atom(path, {"op": "eq", "value": value})


def ne(path: str | Sequence[str | int], value: Any) -> Node:
    return _atom(path, {"op": "ne", "value": value})


def in_(path: str | Sequence[str | int], values: Sequence[Any]) -> Node:
    return _atom(path, {"op": "in", "values": list(values)})


def gt(path: str | Sequence[str | int], value: Any) -> Node:
    return _atom(path, {"op": "gt", "value": value})


def gte(path: str | Sequence[str | int], value: Any) -> Node:
    return _atom(path, {"op": "gte", "value": value})


def lt(path: str | Sequence[str | int], value: Any) -> Node:
    return _atom(path, {"op": "lt", "value": value})


def lte(path: str | Sequence[str | int], value: Any) -> Node:
    return _atom(path, {"op": "lte", "value": value})


def all_(*nodes: Node) -> Node:
    return {"kind": "and", "nodes": list(nodes)}


def any_(*nodes: Node) -> Node:
    return {"kind": "or", "nodes": list(nodes)}
