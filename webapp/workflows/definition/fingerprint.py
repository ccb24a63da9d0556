"""The definition fingerprint: sha256 over name, trigger, awaits and a stable
description of the steps, including their functions' source. A run suspended
under one definition is never resumed under another.

The description must come out the same in every process that loads the same
code (a resume usually runs on another worker than the suspension), so it never
contains a memory address: functions are described by their source (or, when
the source cannot be read, by module, name and bytecode), `functools.partial`
by its function and arguments, bound methods by their function and their
object's class, callable objects by their class and `__call__`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import os
import tokenize
import types
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any


def fingerprint(wf: Any) -> str:
    """The fingerprint of a `Workflow` (anything with name, trigger, awaits, steps)."""
    trigger = {k: describe(v) for k, v in sorted(vars(wf.trigger).items())}
    return sha256_json(
        {
            "name": wf.name,
            "trigger": trigger,
            "awaits": dict(sorted(wf.awaits.items())),
            "steps": describe(list(wf.steps)),
        }
    )


def shape(wf: Any) -> dict[str, Any]:
    """Per top-level step its name, kind and a hash of all but its name (so a
    rename keeps its hash), and a hash of the awaits: what the deploy check
    diffs and the compatibility rule compares (`compat`)."""
    return {
        "awaits": sha256_json(dict(sorted(wf.awaits.items()))),
        "steps": [
            {
                "name": s.name,
                "kind": type(s).__name__,
                "hash": sha256_json(
                    {k: describe(v) for k, v in sorted(vars(s).items()) if k != "name"}
                ),
            }
            for s in wf.steps
        ],
    }


def describe(value: Any) -> Any:
    """A stable, JSON-able description of a step parameter (functions by source)."""
    if callable(value) and not isinstance(value, type):
        return _describe_callable(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {"step": type(value).__name__}
        for k, v in sorted(vars(value).items()):
            out[k] = describe(v)
        return out
    if isinstance(value, list | tuple):
        return [describe(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): describe(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, timedelta):
        return {"seconds": value.total_seconds()}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, type):
        return {"type": _qualified(value)}
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return _opaque(value)


def _describe_callable(fn: Any) -> Any:
    if isinstance(fn, functools.partial):
        return {
            "partial": describe(fn.func),
            "args": describe(list(fn.args)),
            "keywords": describe(dict(fn.keywords)),
        }
    if isinstance(fn, types.MethodType):
        return {"method": describe(fn.__func__), "of": _qualified(type(fn.__self__))}
    if isinstance(fn, types.FunctionType):
        source = _source(fn)
        if source:
            return {"fn": source}
        return {"fn": f"{fn.__module__}.{fn.__qualname__}", "code": _code(fn.__code__)}
    if isinstance(fn, types.BuiltinFunctionType | types.BuiltinMethodType):
        return {"fn": f"{getattr(fn, '__module__', None)}.{fn.__qualname__}"}
    # A callable object: its class, its __call__ and its (describable) state.
    call = next((vars(k)["__call__"] for k in type(fn).__mro__ if "__call__" in vars(k)), None)
    state = {k: v for k, v in sorted(getattr(fn, "__dict__", {}).items())}
    return {
        "callable": _qualified(type(fn)),
        "call": describe(call) if isinstance(call, types.FunctionType) else None,
        "state": describe(state),
    }


def _source(fn: types.FunctionType) -> str:
    """The function's source, only from a real .py file: code run from `-c`, an
    exec'd string or a Markdown file has none that `inspect` can read reliably
    (Python 3.13 answers "" for `-c` and fails to tokenize Markdown)."""
    filename = fn.__code__.co_filename
    if not (filename.endswith(".py") and os.path.isfile(filename)):
        return ""
    try:
        return inspect.getsource(fn).strip()
    except (OSError, TypeError, SyntaxError, tokenize.TokenError):
        return ""


def _code(code: types.CodeType) -> str:
    """Bytecode, names and constants (nested code objects too): no addresses."""
    parts: list[Any] = [code.co_code.hex(), list(code.co_names), list(code.co_varnames)]
    for c in code.co_consts:
        parts.append(_code(c) if isinstance(c, types.CodeType) else describe(c))
    return sha256_json(parts)


def _qualified(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def _opaque(value: Any) -> str:
    """Never `repr()`: the default one carries a memory address."""
    return f"<{_qualified(type(value))}>"


def sha256_json(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=_opaque).encode()).hexdigest()
