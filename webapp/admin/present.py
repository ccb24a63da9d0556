"""Readable text for stored values: match expressions, event payloads, results.
Nothing here decrypts: a sealed value (`enc:v1:...`) is shown as `[sealed]`."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

SEALED_PREFIX = "enc:v1:"  # webapp/accounts/crypto.py: personal data, never opened here
SEALED = "[sealed]"
LONG = 120
# Shown in their own columns (or by the page), not in the summary.
OMITTED = {"workflowName", "definitionFingerprint", "stepIndex"}
OPS = {"eq": "=", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def masked(value: Any) -> Any:
    """`value` with every sealed string replaced by [sealed] (JSON-shaped data)."""
    if isinstance(value, str):
        return SEALED if value.startswith(SEALED_PREFIX) else value
    if isinstance(value, dict):
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def literal(value: Any) -> str:
    value = masked(value)
    if value == SEALED:
        return SEALED
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _node(node: Any, top: bool) -> str:
    if not isinstance(node, dict):
        return "?"
    kind = node.get("kind")
    if kind in ("and", "or"):
        parts = [_node(n, False) for n in node.get("nodes") or []]
        text = f" {kind} ".join(parts) or ("true" if kind == "and" else "false")
        return text if top or len(parts) < 2 else f"({text})"
    if kind == "atom":
        path = ".".join(str(s) for s in node.get("path") or [])
        op = node.get("op") or {}
        if op.get("op") == "in":
            values = ", ".join(literal(v) for v in op.get("values") or [])
            return f"{path} in [{values}]"
        return f"{path} {OPS.get(str(op.get('op')), '?')} {literal(op.get('value'))}"
    return "?"


def match_text(expr: Any) -> str:
    """`userId = "u1" and addressVersion = 3` for the stored expression (see
    webapp/workflows/definition/match.py); "any event" when there is none."""
    if expr is None:
        return "any event"
    if not isinstance(expr, dict) or "expr" not in expr:
        return "unreadable expression"
    return _node(expr["expr"], True)


def short(value: Any, limit: int = LONG) -> str:
    text = value if isinstance(value, str) else literal(value)
    text = masked(text) if isinstance(text, str) else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def when(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(value, str):
        try:
            return when(datetime.fromisoformat(value))
        except ValueError:
            return short(value)
    return "–"


def payload_summary(payload: dict[str, Any]) -> str:
    """One line: `key: value` per field worth reading; match expressions as text."""
    parts = []
    for key, value in payload.items():
        if key in OMITTED:
            continue
        if key == "match":
            parts.append(f"match: {match_text(value)}")
        elif key.endswith("At"):
            parts.append(f"{key}: {when(value)}")
        else:
            parts.append(f"{key}: {short(value, 80)}")
    return "; ".join(parts)


def results_text(results: Any) -> str:
    """The stored results, indented, sealed values masked."""
    return json.dumps(masked(results), ensure_ascii=False, indent=2, sort_keys=True, default=str)
