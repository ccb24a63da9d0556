"""The application's own modules (setting `WORKFLOW_MODULES`).

Every process builds its app with `create_app()` (web, RQ worker, scheduler,
`flask ...` commands, `make run`'s children, the bench), and `create_app()`
imports these modules, so a workflow defined outside `webapp/` is known to all
of them. A module registers its workflows when it is imported, or defines
`register(app)`, which is then called with the app. A module that cannot be
imported, or whose `register(app)` raises, stops start-up with a `ConfigError`
naming it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType

from flask import Flask

from webapp.core.config import ConfigError


def import_modules(names: Iterable[str]) -> list[ModuleType]:
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except Exception as exc:  # any error while importing user code
            raise ConfigError(
                f"WORKFLOW_MODULES: cannot import {name!r} ({type(exc).__name__}: {exc})"
            ) from exc
    return modules


def register_hook(module: ModuleType) -> object | None:
    """The module's own `register(app)`; a `register` it merely imported (e.g.
    `from webapp.workflows import register`) is not a hook."""
    hook = getattr(module, "register", None)
    if callable(hook) and getattr(hook, "__module__", None) == module.__name__:
        return hook
    return None


def load(app: Flask, names: Iterable[str]) -> list[str]:
    """Import every module and call its `register(app)`; returns the names loaded."""
    loaded = []
    for module in import_modules(names):
        hook = register_hook(module)
        if hook is not None:
            try:
                hook(app)  # type: ignore[operator]
            except Exception as exc:
                raise ConfigError(
                    f"WORKFLOW_MODULES: {module.__name__}.register(app) failed "
                    f"({type(exc).__name__}: {exc})"
                ) from exc
        loaded.append(module.__name__)
    return loaded
